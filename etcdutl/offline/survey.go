package offline

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"etcdx/server/schema"
)

// Survey is what an upgrade check reads from a stopped member's data dir (upgradelab assess),
// without changing any file.
type Survey struct {
	// MemberID and ClusterID are the WAL's metadata: whose data dir this is.
	MemberID, ClusterID uint64
	// StorageVersion is the database's (3.5 when it records none, as upstream reads it).
	StorageVersion string
	DBSize         int64
	V2Custom       V2Custom
	Memberships    Memberships
}

// SurveyDataDir reads a stopped member's data dir; walDir "" is the data dir's own. The WAL and
// the database are each read once.
func SurveyDataDir(dataDir, walDir string) (Survey, error) {
	var s Survey
	if err := checkDataDir(dataDir); err != nil {
		return s, err
	}
	v, err := readWALView(dataDir, walDir)
	if err != nil {
		return s, err
	}
	md, err := schema.DecodeWALMetadata(v.in.Metadata)
	if err != nil {
		return s, err
	}
	s.MemberID, s.ClusterID = md.NodeID, md.ClusterID
	if s.V2Custom, err = v2CustomOf(v); err != nil {
		return s, fmt.Errorf("check v2store: %w", err)
	}
	db, err := openDB(schema.BackendPath(dataDir), true, DefaultLockWait)
	if err != nil {
		return s, err
	}
	defer db.Close()
	if s.Memberships, err = membershipsOf(v, db); err != nil {
		return s, err
	}
	return s, db.View(func(tx *bolt.Tx) error {
		l, err := schema.Read(tx)
		s.StorageVersion = l.String()
		s.DBSize = tx.Size() // what Maintenance.Status reports as dbSize, not the file's preallocated length
		return err
	})
}
