package etcdserver

import (
	"errors"
	"fmt"

	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/membership"
)

// v2Stage is the v2 store's deprecation stage this member runs at: the flag's at 3.5 (not-yet by
// default), write-only from 3.6 whatever was asked, as upstream enforces it.
func (s *Server) v2Stage() string {
	if s.v2 == nil {
		return "write-only"
	}
	if s.cfg.V2Deprecation == "" {
		return "not-yet"
	}
	return s.cfg.V2Deprecation
}

// checkV2Content refuses to start, from the write-only stage on, on a data dir whose v2 content
// would be lost: custom content in the newest snapshot's v2 store, or (from 3.6, which keeps no
// v2 store) v2 writes other than membership in the WAL after it, with upstream's words and the
// way out. A v2 read or SYNC in the WAL is no content and is skipped (upstream 3.6 stops on
// those too). At not-yet, custom content is only warned about, as upstream 3.5 does.
func (s *Server) checkV2Content(sn raftpb.Snapshot, ents []raftpb.Entry) error {
	stage := s.v2Stage()
	if len(sn.Data) > 0 {
		custom, err := membership.V2StoreHasCustomContent(sn.Data)
		if err != nil {
			return fmt.Errorf("v2 store in snapshot %d: %w", sn.Metadata.Index, err)
		}
		if custom && stage == "not-yet" {
			s.log.Warn("detected custom v2store content. Etcd v3.5 is the last version allowing to access it using API v2. Please remove the content.")
		} else if custom {
			return fmt.Errorf("detected disallowed custom content in v2store for stage --v2-deprecation=%s (the snapshot at index %d holds v2 keys or v2 auth data that this stage would lose: "+
				"start the member at etcd 3.5 with --v2-deprecation=not-yet, remove the v2 content, and let a new snapshot be taken; etcdutl check v2store shows where it is)", stage, sn.Metadata.Index)
		}
	}
	if s.v2 != nil {
		return nil // a 3.5 member applies the WAL's v2 requests to its v2 store
	}
	for _, e := range ents {
		if e.Index <= sn.Metadata.Index || e.Type != raftpb.EntryNormal || len(e.Data) == 0 {
			continue
		}
		_, v2, _ := membership.DecodeEntryData(e.Data)
		if v2 == nil {
			continue // a v3 request; the applier names undecodable entries
		}
		if _, err := membership.FromV2(v2); err != nil && !errors.Is(err, membership.ErrV2NoEffect) {
			return fmt.Errorf("detected disallowed v2 WAL for stage --v2-deprecation=%s (entry %d is a v2 %s of %s that etcd 3.6 cannot keep: "+
				"start the member at etcd 3.5, remove the v2 content, and let a snapshot cover the entry; etcdutl check v2store shows where it is)", stage, e.Index, v2.Method, v2.Path)
		}
	}
	return nil
}
