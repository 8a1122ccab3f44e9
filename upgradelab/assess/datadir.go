package assess

import (
	"fmt"

	"etcdx/etcdutl/offline"
	"etcdx/server/membership"
)

// AddDataDir reads a stopped member's data dir (or a copy of it) and attaches what it holds to
// the member whose ID its WAL records, or to a new entry when the cluster lists no such member.
func AddDataDir(f *Facts, path, walDir string) error {
	s, err := offline.SurveyDataDir(path, walDir)
	if err != nil {
		return fmt.Errorf("data dir %s: %w", path, err)
	}
	d := s.Memberships.Drift()
	dd := &DataDir{Path: path, V2Custom: s.V2Custom, StorageVersion: s.StorageVersion, DBSize: s.DBSize,
		Zombies: hexIDs(d.Zombies), Demoted: hexIDs(d.Demoted), Missing: hexIDs(d.Missing)}
	id := fmt.Sprintf("%x", s.MemberID)
	for i := range f.Members {
		if f.Members[i].ID == id {
			f.Members[i].DataDir = dd
			return nil
		}
	}
	name := id
	for _, m := range s.Memberships.V3.Members {
		if m.ID == s.MemberID && m.Name != "" {
			name = m.Name
		}
	}
	f.Members = append(f.Members, Member{Name: name, ID: id, DataDir: dd})
	return nil
}

func hexIDs(ms []membership.Member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%x", m.ID))
	}
	return out
}
