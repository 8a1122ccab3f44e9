package etcdserver

import (
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"etcdx/server/membership"
	"etcdx/server/schema"
	"etcdx/server/version"
)

// reconcileMembership brings the v3 store's membership in line with the v2 store's on a data
// dir last written at 3.5, where the v2 store was the truth and some 3.5 patches let the two
// drift apart. v2 is the v2 view up to the database's consistent index (the snapshot's v2 store
// and the WAL's configuration changes after it). As upstream at this member's level:
//   - a voter the v3 store still holds as a learner (etcd-io/etcd#19557) is a voter again
//     (upstream 3.5.20+ and 3.6 do so at start: "Syncing member in v3store");
//   - at 3.5, a member the v2 store no longer has is removed from the v3 store (upstream 3.5.26+,
//     #20967: "Removing zombie member from v3store").
//
// From 3.6 on the v3 store is the truth, and upstream 3.6 would bring such a removed member
// back into the cluster; ours refuses to start instead, naming the members and the remedy.
// promotedInWAL is the members the WAL's replayed entries promote.
func (s *Server) reconcileMembership(v2 membership.State, promotedInWAL map[uint64]bool) error {
	var storage version.Level
	if err := s.be.View(func(tx *bolt.Tx) (err error) {
		storage, err = schema.Read(tx)
		return err
	}); err != nil {
		return err
	}
	if !storage.Less(version.V3_6) {
		return nil // written at 3.6 or later: the v3 store has been the truth since
	}
	d := membership.Compare(v2, s.mem.State())
	fromV3 := version.MembershipFromV3.Built(s.cfg.Level)
	if len(d.Zombies) > 0 && fromV3 {
		var ids []string
		for _, m := range d.Zombies {
			ids = append(ids, fmt.Sprintf("%x", m.ID))
		}
		return fmt.Errorf("the v3 store holds member(s) %s that the v2 store removed (etcd-io/etcd#20967): from %s the v3 store is the "+
			"membership's truth and they would come back into the cluster; start this data dir at 3.5 first (ours at level 3.5, or upstream "+
			"3.5.26 or later), which removes them from the v3 store, then move it to %s", strings.Join(ids, ", "), s.cfg.Level, s.cfg.Level)
	}
	if len(d.Demoted) == 0 && (fromV3 || len(d.Zombies) == 0) {
		return nil
	}
	b := s.be.Batch()
	var err error
	for _, m := range d.Demoted {
		m.IsLearner = false
		// Upstream's two events for it: fixed from the WAL's promotion when it replays the
		// entry, or else from the v2 store at start.
		if promotedInWAL[m.ID] {
			s.log.Info("Forcibly apply member promotion request in v3store", "member", fmt.Sprintf("%+v", m))
		} else {
			s.log.Warn("Syncing member in v3store", "member", fmt.Sprintf("%+v", m))
		}
		if err = s.mem.Save(b, &m); err != nil {
			break
		}
	}
	if !fromV3 {
		for _, m := range d.Zombies {
			if err != nil {
				break
			}
			s.log.Warn("Removing zombie member from v3store", "member", fmt.Sprintf("%+v", m))
			err = s.mem.Remove(b, m.ID)
		}
	}
	if uerr := b.Unlock(); err == nil {
		err = uerr
	}
	if err != nil {
		return fmt.Errorf("sync the v3 store's membership with the v2 store's: %w", err)
	}
	return s.be.Commit()
}
