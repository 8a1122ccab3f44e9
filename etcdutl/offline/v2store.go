package offline

import (
	"errors"
	"fmt"

	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/membership"
	"etcdx/server/schema"
	"etcdx/server/snap"
	"etcdx/server/wal"
)

// V2Custom is what etcdutl check v2store found: custom content in the v2 store of the newest
// snapshot the WAL records, and v2 requests in the WAL after it that upstream 3.6 would not
// apply (anything but a member's published attributes and the cluster version).
type V2Custom struct {
	Store, WAL bool
	// Entries counts the WAL's bare v2 requests after the newest snapshot, custom or not (a 3.5
	// member proposes one at every start to publish its name and client URLs): upstream 3.7
	// cannot read them and crash-loops replaying them.
	Entries int
}

// CheckV2Store looks for v2 content that keeps a 3.5 member from moving to 3.6, as upstream
// 3.5's etcdutl check v2store does. walDir "" is the data dir's own.
func CheckV2Store(dataDir, walDir string) (V2Custom, error) {
	v, err := readWALView(dataDir, walDir)
	if err != nil {
		return V2Custom{}, err
	}
	return v2CustomOf(v)
}

// v2CustomOf finds the v2 content in the newest snapshot's v2 store and in the WAL after it.
func v2CustomOf(v walView) (V2Custom, error) {
	var found V2Custom
	var after uint64
	if v.newest != nil {
		after = v.newest.Metadata.Index
		var err error
		if found.Store, err = membership.V2StoreHasCustomContent(v.newest.Data); err != nil {
			return found, fmt.Errorf("failed to recover v2store from snapshot: %w", err)
		}
	}
	for _, e := range v.ents {
		if e.Index <= after || e.Type != raftpb.EntryNormal || len(e.Data) == 0 {
			continue
		}
		// A v2 request bare (as 3.5 proposes it) or inside a v3 request's V2 field, as
		// upstream's check reads both.
		_, v2, err := membership.DecodeEntryData(e.Data)
		if v2 == nil {
			if err != nil {
				return found, fmt.Errorf("failed to unmarshal WAL entry at index %d: %w", e.Index, err)
			}
			continue
		}
		found.Entries++
		// SYNC and QGET too: upstream 3.6 refuses every v2 request but a PUT of those two.
		if _, err := membership.FromV2(v2); err != nil {
			found.WAL = true
		}
	}
	return found, nil
}

// walView is a stopped member's WAL as the offline readers use it, read once: what Inspect
// found, the newest snapshot it records, and every entry it holds.
type walView struct {
	in     *wal.Inspection
	newest *raftpb.Snapshot
	ents   []raftpb.Entry
}

// readWALView reads the WAL of dataDir (or walDir, when set) without changing any file.
func readWALView(dataDir, walDir string) (walView, error) {
	if walDir == "" {
		walDir = schema.WALDir(dataDir)
	}
	in, err := wal.Inspect(walDir)
	if err != nil {
		return walView{}, err
	}
	ents, err := wal.Entries(walDir)
	if err != nil {
		return walView{}, fmt.Errorf("failed to read WAL: %w", err)
	}
	return walView{in: in, newest: newestRecordedSnapshot(schema.SnapDir(dataDir), in), ents: ents}, nil
}

// newestRecordedSnapshot is the newest .snap file the WAL has a marker for (nil: none).
func newestRecordedSnapshot(dir string, in *wal.Inspection) *raftpb.Snapshot {
	paths, err := snap.List(dir)
	if err != nil {
		return nil
	}
	recorded := map[[2]uint64]bool{}
	for _, m := range in.Snapshots {
		recorded[[2]uint64{m.Index, m.Term}] = true
	}
	for _, p := range paths { // newest first
		if sn, err := snap.Load(p); err == nil && recorded[[2]uint64{sn.Metadata.Index, sn.Metadata.Term}] {
			return &sn
		}
	}
	return nil
}

// Errors of etcdutl check v2store, with upstream's texts.
var (
	ErrV2StoreCustom = errors.New("detected custom content in v2store")
	ErrWALCustom     = errors.New("detected custom v2 content in WAL records")
	ErrBothCustom    = errors.New("detected custom v2 content in both v2store and WAL records")
)

// Err is the refusal for what was found (nil: nothing).
func (c V2Custom) Err() error {
	switch {
	case c.Store && c.WAL:
		return ErrBothCustom
	case c.Store:
		return ErrV2StoreCustom
	case c.WAL:
		return ErrWALCustom
	}
	return nil
}
