package lab

import (
	"errors"
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
