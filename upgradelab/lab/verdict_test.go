package lab

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"etcdx/pkg/judge"
)

func TestJudge(t *testing.T) {
	same := map[string]judge.MemberHash{"m1": {Hash: 7, Revision: 10}, "m2": {Hash: 7, Revision: 10}}
	differ := map[string]judge.MemberHash{"m1": {Hash: 7, Revision: 10}, "m2": {Hash: 8, Revision: 10}}
	clean := Findings{Hashes: same, Linearizable: porcupine.Ok, HistoryOps: 100, Timeout: time.Minute}
	with := func(change func(*Findings)) Findings { f := clean; change(&f); return f }
	cases := []struct {
		name string
		f    Findings
		want []string // the lines the verdict must hold; none: passed
	}{
		{"every check passed", clean, nil},
		{"a workload problem", with(func(f *Findings) { f.Problems = []string{"watch missed revision 12"} }), []string{"watch missed revision 12"}},
		{"hashes differ", with(func(f *Findings) { f.Hashes = differ }), []string{"m1", "m2"}},
		{"hashes unreadable", with(func(f *Findings) { f.HashErr = errors.New("hashkv on m2: timeout") }), []string{"hashkv on m2: timeout"}},
		{"lost writes", with(func(f *Findings) { f.Lost = []string{"/l/c1/3", "/l/c2/9"} }), []string{"2 acknowledged writes lost, e.g. /l/c1/3, /l/c2/9"}},
		{"ledger unreadable", with(func(f *Findings) { f.LostErr = errors.New("read the ledger back: no leader") }), []string{"no leader"}},
		{"not linearizable", with(func(f *Findings) { f.Linearizable = porcupine.Illegal }), []string{"history of 100 register operations is not linearizable"}},
		{"linearizability undecided", with(func(f *Findings) { f.Linearizable = porcupine.Unknown }), []string{"did not finish within 1m0s"}},
		{"no linearizability answer", with(func(f *Findings) { f.Linearizable = "" }), []string{"gave no answer"}},
		{"everything at once", with(func(f *Findings) {
			f.Problems, f.Lost, f.Linearizable, f.Hashes = []string{"p"}, []string{"k"}, porcupine.Illegal, differ
		}), []string{"p", "1 acknowledged writes lost", "not linearizable", "m2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Judge(tc.f)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("failed: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("passed")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("verdict %q lacks %q", err, w)
				}
			}
		})
	}
}

// The lab judges what every member's /version said over the run with pkg/judge's version
// checks: a downgrade the plan enabled allows the cluster version down to its target, nothing
// else does; a member that did not answer, or had no cluster version yet, is left out.
func TestRecorderJudgesVersions(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	rc := newRecorder()
	for _, v := range []VersionSample{
		{At: at(0), Member: "m1", Answered: true, Server: "3.7.3", Cluster: "not_decided"},
		{At: at(1), Member: "m1", Answered: true, Server: "3.7.3", Cluster: "3.7.0", Storage: "3.7.0"},
		{At: at(2), Member: "m2", Answered: false},
		{At: at(3), Member: "m2", Answered: true, Server: "3.7.3", Cluster: "3.7.0", Storage: "3.7.0"},
		{At: at(6), Member: "m1", Answered: true, Server: "3.7.3", Cluster: "3.6.0", Storage: "3.7.0"},
		{At: at(7), Member: "m1", Answered: true, Server: "3.7.3", Cluster: "3.6.0", Storage: "3.6.0"},
		{At: at(8), Member: "m1", Answered: true, Server: "3.6.16", Cluster: "3.6.0", Storage: "3.6.0"},
	} {
		rc.sampled(v)
	}
	enabled := []judge.DowngradeWindow{{Target: "3.6", From: at(5).UnixNano()}}
	if fs := rc.judgeVersions(enabled); len(fs) != 0 {
		t.Fatalf("a downgrade the plan enabled: %v", judge.Strings(fs))
	}
	fs := rc.judgeVersions(nil)
	if got := judge.Fired(fs); !reflect.DeepEqual(got, []judge.Check{judge.ClusterVersionLowered, judge.StorageVersionAheadOfCluster}) || !strings.HasPrefix(fs[0].Detail, "m1 ") {
		t.Fatalf("no downgrade enabled: %v", judge.Strings(fs))
	}
}
