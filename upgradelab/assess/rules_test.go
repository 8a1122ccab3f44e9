package assess

import (
	"strings"
	"testing"

	"github.com/coreos/go-semver/semver"

	"etcdx/etcdutl/offline"
	"etcdx/upgradelab/releases"
)

// liveCluster is three answering members at the given versions, m1 leading.
func liveCluster(versions ...string) Facts {
	var f Facts
	for i, v := range versions {
		name := "m" + string(rune('1'+i))
		f.Members = append(f.Members, Member{Name: name, Listed: true, Live: &Live{Endpoint: name + ":2379", Version: v, Leader: i == 0,
			DBSize: 1 << 20, DBSizeInUse: 1 << 20, Quota: 2 << 30, RaftIndex: 100, AppliedIndex: 100}})
	}
	f.ClusterVersion = versions[0][:3] + ".0"
	return f
}

// with applies changes to a copy of the facts.
func with(f Facts, change func(*Facts)) Facts {
	f.Members = append([]Member(nil), f.Members...)
	for i := range f.Members {
		if f.Members[i].Live != nil {
			l := *f.Members[i].Live
			f.Members[i].Live = &l
		}
	}
	change(&f)
	return f
}

func TestEvaluate(t *testing.T) {
	k, err := releases.Load()
	if err != nil {
		t.Fatal(err)
	}
	clean36 := liveCluster("3.6.16", "3.6.16", "3.6.16")
	old35 := liveCluster("3.5.17", "3.5.17", "3.5.17")
	for _, tc := range []struct {
		name    string
		facts   Facts
		target  string
		verdict Verdict
		// want are "check subject verdict" lines that must be among the findings; notWant
		// are checks that must not appear at all.
		want    []string
		notWant []string
		path    int
	}{
		{name: "a healthy 3.6.16 cluster to 3.7.3", facts: clean36, target: "3.7.3", verdict: OK, path: 1,
			want:    []string{"health cluster ok", "skipped-minor cluster ok", "patch-below-leave cluster ok", "alarms cluster ok"},
			notWant: []string{"v2-custom", "learner-mismatch", "zombie-members"}},
		{name: "3.5.17 straight to 3.7: every 3.5 blocker named", facts: old35, target: "3.7.3", verdict: Block, path: 3,
			want: []string{"skipped-minor cluster block", "patch-below-leave m1 block", "patch-below-leave m3 block",
				"learner-mismatch cluster warn", "zombie-members cluster warn", "v2-custom cluster warn", "v2-entries cluster warn"}},
		{name: "3.5's v2 requests still in a WAL on the way to 3.7", facts: with(liveCluster("3.6.16", "3.6.16"), func(f *Facts) {
			f.Members = append(f.Members, Member{Name: "m3", DataDir: &DataDir{Path: "/d", V2Custom: offline.V2Custom{Entries: 3}}})
		}), target: "3.7.3", verdict: Block, path: 1, want: []string{"v2-entries m3 block"}},
		{name: "a 3.6 data dir with none", facts: with(liveCluster("3.6.16", "3.6.16"), func(f *Facts) {
			f.Members = append(f.Members, Member{Name: "m3", DataDir: &DataDir{Path: "/d"}})
		}), target: "3.7.3", verdict: OK, path: 1, want: []string{"v2-entries cluster ok"}},
		{name: "from 3.4: its health reads before 3.6", facts: liveCluster("3.4.23", "3.4.23", "3.4.23"), target: "3.7.3", verdict: Block, path: 3,
			want: []string{"v2-health-reads cluster warn", "v2-entries cluster warn", "skipped-minor cluster block"}},
		{name: "from 3.4 to 3.5 only", facts: liveCluster("3.4.23", "3.4.23", "3.4.23"), target: "3.5.35", verdict: OK, path: 1,
			want: []string{"skipped-minor cluster ok"}, notWant: []string{"v2-health-reads"}},
		{name: "3.6 below 3.6.11", facts: liveCluster("3.6.16", "3.6.4", "3.6.16"), target: "3.7.3", verdict: Block, path: 2,
			want: []string{"patch-below-leave m2 block"}},
		{name: "a patch hop within 3.5 enters no minor", facts: old35, target: "3.5.35", verdict: OK, path: 1,
			notWant: []string{"patch-below-leave m1", "v2-custom", "learner-mismatch"}},
		{name: "a NOSPACE alarm", facts: with(clean36, func(f *Facts) { f.Alarms = []Alarm{{Member: "m2", Type: "NOSPACE"}} }),
			target: "3.7.3", verdict: Block, path: 1, want: []string{"alarms m2 block"}},
		{name: "a flag 3.7 refuses", facts: with(clean36, func(f *Facts) {
			f.Members[1].Flags, f.Members[1].FlagsFrom = map[string]string{"experimental-compaction-batch-limit": "100", "name": "m2"}, "etcd.yaml"
			f.Members[2].Flags, f.Members[2].FlagsFrom = map[string]string{"compaction-batch-limit": "100"}, "etcd.yaml"
		}), target: "3.7.3", verdict: Block, path: 1, want: []string{"flags m2 block", "flags m3 ok"}},
		{name: "the same flag on a patch hop", facts: with(liveCluster("3.6.4", "3.6.4", "3.6.4"), func(f *Facts) {
			f.Members[0].Flags, f.Members[0].FlagsFrom = map[string]string{"experimental-compaction-batch-limit": "100"}, "etcd.yaml"
		}), target: "3.6.16", verdict: OK, path: 1, want: []string{"flags m1 ok"}},
		{name: "a learner promotion the v3 store missed", facts: with(liveCluster("3.5.35", "3.5.35", "3.5.35"), func(f *Facts) {
			f.Members[2].Live = nil
			f.Members[2].DataDir = &DataDir{Path: "/var/lib/etcd", Demoted: []string{"8e9e05c52164694d"}}
		}), target: "3.6.16", verdict: Block, path: 1, want: []string{"learner-mismatch m3 block", "zombie-members cluster ok", "v2-custom cluster ok"}},
		{name: "custom v2 content in a data dir", facts: with(liveCluster("3.5.35", "3.5.35"), func(f *Facts) {
			f.Members = append(f.Members, Member{Name: "m3", DataDir: &DataDir{Path: "/d", V2Custom: offline.V2Custom{WAL: true}}})
		}), target: "3.6.16", verdict: Block, path: 1, want: []string{"v2-custom m3 block"}},
		{name: "--enable-v2 in a member's flags", facts: with(liveCluster("3.5.35", "3.5.35"), func(f *Facts) {
			f.Members[0].Flags, f.Members[0].FlagsFrom = map[string]string{"enable-v2": "true"}, "/etc/default/etcd"
		}), target: "3.6.16", verdict: Block, path: 1, want: []string{"v2-custom m1 warn", "flags m1 block"}},
		{name: "a downgrade enabled", facts: with(clean36, func(f *Facts) { f.Downgrade = &Downgrade{Target: "3.5"} }),
			target: "3.7.3", verdict: Block, path: 1, want: []string{"downgrade cluster block"}},
		{name: "a member that does not answer", facts: with(clean36, func(f *Facts) { f.Members[2].Live = nil }),
			target: "3.7.3", verdict: Block, path: 1, want: []string{"health cluster block"}},
		{name: "a learner behind", facts: with(clean36, func(f *Facts) {
			f.Members[2].Learner = true
			f.Members[2].Live.AppliedIndex = 40
		}), target: "3.7.3", verdict: Warn, path: 1, want: []string{"learner-present m3 warn"}},
		{name: "near the quota and fragmented", facts: with(clean36, func(f *Facts) {
			f.Members[0].Live.DBSize, f.Members[0].Live.DBSizeInUse, f.Members[0].Live.Quota = 1800<<20, 700<<20, 2<<30
		}), target: "3.7.3", verdict: Warn, path: 1, want: []string{"quota m1 warn", "fragmentation m1 warn"}},
		{name: "storage version behind the cluster version", facts: with(clean36, func(f *Facts) { f.Members[1].Live.StorageVersion = "3.5.0" }),
			target: "3.7.3", verdict: Warn, path: 1, want: []string{"storage-version m2 warn"}},
		{name: "members two minors apart", facts: liveCluster("3.5.35", "3.7.3", "3.5.35"), target: "3.7.3", verdict: Block, path: 2,
			want: []string{"skipped-minor cluster block"}},
		{name: "a downgrade path from 3.7", facts: liveCluster("3.7.3", "3.7.3", "3.7.3"), target: "3.6.16", verdict: OK, path: 1},
		{name: "a version no line knows", facts: liveCluster("3.9.1", "3.9.1", "3.9.1"), target: "3.7.3", verdict: Block, path: 0,
			want: []string{"path cluster block"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Evaluate(k, tc.facts, semver.New(tc.target))
			var got []string
			for _, f := range r.Findings {
				got = append(got, f.Check+" "+f.Subject+" "+string(f.Verdict))
				if f.Verdict != OK && (f.Fix == "" || len(f.Sources) == 0) {
					t.Errorf("finding %s %s: %s has no fix or no source", f.Check, f.Subject, f.Verdict)
				}
			}
			all := strings.Join(got, "\n")
			if r.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s; findings:\n%s", r.Verdict, tc.verdict, all)
			}
			for _, w := range tc.want {
				if !strings.Contains("\n"+all+"\n", "\n"+w+"\n") {
					t.Errorf("no finding %q; findings:\n%s", w, all)
				}
			}
			for _, nw := range tc.notWant {
				if strings.Contains(all, nw) {
					t.Errorf("unexpected finding %q; findings:\n%s", nw, all)
				}
			}
			if len(r.Path) != tc.path {
				t.Errorf("path has %d hops, want %d: %+v", len(r.Path), tc.path, r.Path)
			}
			for _, f := range r.Findings {
				if f.PathHandled != (f.Verdict == Block && (f.Check == "patch-below-leave" || f.Check == "skipped-minor" && strings.Contains(f.Summary, "the path goes through"))) {
					t.Errorf("finding %s %s: pathHandled %v", f.Check, f.Subject, f.PathHandled)
				}
			}
			if len(r.Findings) > 0 && r.Findings[0].Verdict != r.Verdict {
				t.Errorf("findings are not worst first: %s", all)
			}
		})
	}
}
