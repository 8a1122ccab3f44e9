package judge

import (
	"reflect"
	"strings"
	"testing"
)

// Each check is shown a clean history and the same history with one planted fault; the fault
// must fire that check and only that one.
func TestEachPlantedFaultFiresItsCheck(t *testing.T) {
	acked := map[string]string{"a": "1", "b": "2", "c": "3"}
	revs := map[int][]Seen{0: {{"put", 5}, {"get", 5}, {"put", 9}}, 1: {{"get", 3}, {"get", 4}}}
	hashes := map[string]MemberHash{"m1": {42, 3, 100}, "m2": {42, 3, 100}, "m3": {42, 3, 100}}
	run := func(have map[string]string, revs map[int][]Seen, hashes map[string]MemberHash) []Finding {
		var fs []Finding
		fs = append(fs, LostWriteFindings(acked, have)...)
		fs = append(fs, Monotonic(revs)...)
		return append(fs, Hashes(hashes)...)
	}
	clean := map[string]string{"a": "1", "b": "2", "c": "3", "unacked": "x"}
	if fs := run(clean, revs, hashes); len(fs) != 0 {
		t.Fatalf("a clean run: %v", Strings(fs))
	}
	cases := []struct {
		name   string
		have   map[string]string
		revs   map[int][]Seen
		hashes map[string]MemberHash
		want   Check
		detail string
	}{
		{"a write lost", map[string]string{"a": "1", "c": "3"}, revs, hashes, LostWrite, `b: acknowledged "2", the store has none`},
		{"a write overwritten", map[string]string{"a": "1", "b": "2", "c": "x"}, revs, hashes, LostWrite, `c: acknowledged "3", the store has "x"`},
		{"a read back in time", clean, map[int][]Seen{0: revs[0], 1: {{"put", 7}, {"get", 6}, {"get", 2}}}, hashes, RevisionWentBack, "client 1: get saw revision 6 after put saw 7"},
		{"a member's keyspace differs", clean, revs, map[string]MemberHash{"m1": {42, 3, 100}, "m2": {43, 3, 100}, "m3": {42, 3, 100}}, HashMismatch, "m1,m3: hash 42 (compacted at 3) at revision 100; m2: hash 43"},
	}
	for _, c := range cases {
		fs := run(c.have, c.revs, c.hashes)
		if got := Fired(fs); !reflect.DeepEqual(got, []Check{c.want}) {
			t.Errorf("%s: fired %v, want only %s (%v)", c.name, got, c.want, Strings(fs))
			continue
		}
		if len(fs) != 1 || !strings.Contains(fs[0].Detail, c.detail) {
			t.Errorf("%s: %v, want one finding saying %q", c.name, Strings(fs), c.detail)
		}
	}
}

func TestLostWritesSortedKeys(t *testing.T) {
	acked := map[string]string{"d": "4", "a": "1", "c": "3", "b": "2"}
	if lost := LostWrites(acked, map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}); len(lost) != 0 {
		t.Fatalf("nothing lost: %v", lost)
	}
	if lost := LostWrites(acked, map[string]string{"a": "1", "c": "x"}); strings.Join(lost, ",") != "b,c,d" {
		t.Fatalf("lost %v, want b,c,d", lost)
	}
}

func TestHashesCompareOnlyTheSameRange(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hashes map[string]MemberHash
		want   string // the finding's detail, or none
	}{
		{"agree", map[string]MemberHash{"m1": {42, 3, 100}, "m2": {42, 3, 100}}, ""},
		{"another hash over the same range", map[string]MemberHash{"m1": {42, 3, 100}, "m2": {43, 3, 100}},
			"members disagree on the keyspace: m1: hash 42 (compacted at 3) at revision 100; m2: hash 43 (compacted at 3) at revision 100"},
		{"another revision", map[string]MemberHash{"m1": {42, 3, 100}, "m2": {42, 3, 101}},
			"members disagree on the keyspace: m1: hash 42 (compacted at 3) at revision 100; m2: hash 42 (compacted at 3) at revision 101"},
		{"a compaction's kept hash beside a restarted member's: another range", map[string]MemberHash{"m1": {42, -1, 23}, "m2": {7, 23, 23}, "m3": {42, -1, 23}}, ""},
		{"another range, and a disagreement within one", map[string]MemberHash{"m1": {42, -1, 23}, "m2": {7, 23, 23}, "m3": {41, -1, 23}},
			"members disagree on the keyspace: m1: hash 42 (compacted at -1) at revision 23; m2: hash 7 (compacted at 23) at revision 23; m3: hash 41 (compacted at -1) at revision 23"},
	} {
		got := ""
		if fs := Hashes(tc.hashes); len(fs) == 1 && fs[0].Check == HashMismatch {
			got = fs[0].Detail
		} else if len(fs) > 0 {
			got = strings.Join(Strings(fs), "; ")
		}
		if got != tc.want {
			t.Errorf("%s:\n got  %q\n want %q", tc.name, got, tc.want)
		}
	}
}

func TestHashesNeedTwoMembers(t *testing.T) {
	if fs := Hashes(map[string]MemberHash{"m1": {1, 0, 5}}); fs != nil {
		t.Fatalf("one member cannot disagree: %v", fs)
	}
}

func TestWrittenOncePlantedFault(t *testing.T) {
	once := []Record{{Key: "ledger/a", Version: 1, Create: 5, ModRevision: 5}, {Key: "ledger/b", Version: 1, Create: 9, ModRevision: 9}}
	if fs := WrittenOnce("m1", once); len(fs) != 0 {
		t.Fatalf("keys written once: %v", Strings(fs))
	}
	twice := append(once, Record{Key: "ledger/c", Version: 2, Create: 11, ModRevision: 14}, Record{Key: "ledger/d", Version: 1, Create: 12, ModRevision: 15})
	fs := WrittenOnce("m1", twice)
	if got := Fired(fs); !reflect.DeepEqual(got, []Check{WriteAppliedTwice}) || len(fs) != 2 || !strings.Contains(fs[0].Detail, "ledger/c") || !strings.Contains(fs[1].Detail, "ledger/d") {
		t.Fatalf("a key applied twice, one re-created: %v", Strings(fs))
	}
}
