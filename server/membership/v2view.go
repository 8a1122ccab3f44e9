package membership

import (
	"fmt"
	"math"
	"sort"

	"go.etcd.io/raft/v3/raftpb"
)

// A 3.5 member keeps the membership twice: in the v2 store (its source of truth, carried in
// raft snapshots) and in the v3 store (the database's members buckets, the source of truth from
// 3.6 on). Some 3.5 patches let the two drift apart (etcd-io/etcd#19557: promotions missing from
// the v3 store; #20967: removals missing from it), and the upgrade to 3.6 then changes the
// membership. This file rebuilds the v2 view and compares the two.

// ReplayV2 is the v2 view after the WAL's configuration changes in ents with index in
// (after, upTo] are applied to st (the v2 store of the snapshot at after). A change every member
// refused when it applied leaves the membership as it was. The member's --max-learners is not
// known here: learner additions are not counted.
func ReplayV2(st State, ents []raftpb.Entry, after, upTo uint64) (State, error) {
	v2 := FromState(st)
	for _, e := range ents {
		if e.Index <= after || e.Index > upTo || e.Type != raftpb.EntryConfChange {
			continue
		}
		var cc raftpb.ConfChange
		if err := cc.Unmarshal(e.Data); err != nil {
			return State{}, fmt.Errorf("WAL entry %d: conf change: %w", e.Index, err)
		}
		mem, promote, err := DecodeConfChange(cc)
		if err != nil {
			return State{}, fmt.Errorf("WAL entry %d: %w", e.Index, err)
		}
		if v2.Validate(cc, mem, promote, math.MaxInt) != nil {
			continue
		}
		v2.Apply(cc, mem)
	}
	return v2.State(), nil
}

// PromotedIn is the members whose promotion from learner is among the WAL's configuration
// changes in ents with index in (after, upTo]; entries it cannot decode are left to ReplayV2.
func PromotedIn(ents []raftpb.Entry, after, upTo uint64) map[uint64]bool {
	out := map[uint64]bool{}
	for _, e := range ents {
		if e.Index <= after || e.Index > upTo || e.Type != raftpb.EntryConfChange {
			continue
		}
		var cc raftpb.ConfChange
		if cc.Unmarshal(e.Data) != nil {
			continue
		}
		if _, promote, err := DecodeConfChange(cc); err == nil && promote {
			out[cc.NodeID] = true
		}
	}
	return out
}

// Drift is where the v3 store disagrees with the v2 store.
type Drift struct {
	// Zombies are in the v3 store's members but not in the v2 store's (etcd-io/etcd#20967).
	Zombies []Member
	// Demoted are voters in the v2 store that the v3 store still holds as learners
	// (etcd-io/etcd#19557).
	Demoted []Member
	// Missing are in the v2 store's members but not in the v3 store's.
	Missing []Member
}

// Empty says the two stores agree.
func (d Drift) Empty() bool { return len(d.Zombies)+len(d.Demoted)+len(d.Missing) == 0 }

// Compare is the v3 store's drift from the v2 store; each list is by ID.
func Compare(v2, v3 State) Drift {
	var d Drift
	inV2 := map[uint64]Member{}
	for _, m := range v2.Members {
		inV2[m.ID] = m
	}
	inV3 := map[uint64]bool{}
	for _, m := range v3.Members {
		inV3[m.ID] = true
		old, ok := inV2[m.ID]
		switch {
		case !ok:
			d.Zombies = append(d.Zombies, m)
		case m.IsLearner && !old.IsLearner:
			d.Demoted = append(d.Demoted, m)
		}
	}
	for _, m := range v2.Members {
		if !inV3[m.ID] {
			d.Missing = append(d.Missing, m)
		}
	}
	for _, l := range [][]Member{d.Zombies, d.Demoted, d.Missing} {
		sort.Slice(l, func(i, j int) bool { return l[i].ID < l[j].ID })
	}
	return d
}
