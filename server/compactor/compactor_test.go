package compactor

import (
	"testing"
	"time"
)

func TestParseRetentionAsUpstream(t *testing.T) {
	cases := []struct {
		mode, in string
		period   time.Duration
		revs     int64
		bad      bool
	}{
		{"periodic", "24", 24 * time.Hour, 0, false}, // a bare number is hours in periodic mode
		{"periodic", "30m", 30 * time.Minute, 0, false},
		{"periodic", "1h30m", 90 * time.Minute, 0, false},
		{"periodic", "0", 0, 0, false},
		{"periodic", "", 0, 0, false},
		{"revision", "1000", 0, 1000, false},
		{"revision", "1h", 0, 0, true},
		{"periodic", "soon", 0, 0, true},
		{"periodic", "-3", 0, 0, true},
		{"sometimes", "1", 0, 0, true},
	}
	for _, c := range cases {
		p, r, err := ParseRetention(c.mode, c.in)
		if (err != nil) != c.bad || p != c.period || r != c.revs {
			t.Errorf("ParseRetention(%q, %q) = %v, %d, %v", c.mode, c.in, p, r, err)
		}
	}
}

// The rule asked once per interval; each step is the seconds since start, the store's revision
// and compaction point then, and where the rule compacts (0: nowhere).
func TestRetentionNext(t *testing.T) {
	type step struct {
		at             int
		rev, compacted int64
		want           int64
	}
	for _, tc := range []struct {
		name     string
		rule     Retention
		interval time.Duration
		steps    []step
	}{
		{"periodic: the newest sample a period old", Retention{Period: 10 * time.Second}, time.Second, []step{
			{0, 5, 0, 0}, {5, 20, 0, 0}, {9, 30, 0, 0},
			{10, 40, 0, 5},  // the sample at 0 is a period old
			{12, 41, 5, 0},  // nothing a period old since
			{15, 50, 5, 20}, // the sample at 5
		}},
		{"periodic: skips samples that fell a period behind together, compacting at the newest", Retention{Period: 10 * time.Second}, time.Second, []step{
			{0, 5, 0, 0}, {1, 6, 0, 0}, {2, 7, 0, 0}, {30, 9, 0, 7},
		}},
		{"periodic: never at or below the compaction point", Retention{Period: 10 * time.Second}, time.Second, []step{
			{0, 5, 0, 0}, {10, 8, 5, 0}, {20, 9, 8, 0},
		}},
		{"periodic of a day: asked hourly", Retention{Period: 24 * time.Hour}, time.Hour, nil},
		{"periodic of a second: asked every second", Retention{Period: time.Second}, time.Second, []step{
			{0, 3, 0, 0}, {1, 4, 0, 3},
		}},
		{"revision: the last N revisions", Retention{Revisions: 10}, 5 * time.Minute, []step{
			{0, 5, 0, 0}, {300, 20, 0, 10}, {600, 20, 10, 0}, {900, 35, 10, 25},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.rule
			if got := r.Interval(); got != tc.interval {
				t.Errorf("interval %v, want %v", got, tc.interval)
			}
			start := time.Unix(1_000_000, 0)
			for _, s := range tc.steps {
				if got := r.Next(start.Add(time.Duration(s.at)*time.Second), s.rev, s.compacted); got != s.want {
					t.Errorf("at %ds (rev %d, compacted %d): compact at %d, want %d", s.at, s.rev, s.compacted, got, s.want)
				}
			}
		})
	}
}

// A member that lost leadership forgets what it sampled: leading again, it waits a whole period.
func TestRetentionForget(t *testing.T) {
	r := Retention{Period: 10 * time.Second}
	start := time.Unix(1_000_000, 0)
	r.Next(start, 5, 0)
	r.Forget()
	if got := r.Next(start.Add(10*time.Second), 9, 0); got != 0 {
		t.Fatalf("after Forget: compact at %d, want nothing until a period after leading again", got)
	}
	if got := r.Next(start.Add(20*time.Second), 12, 0); got != 9 {
		t.Fatalf("a period after leading again: compact at %d, want 9", got)
	}
}

func TestRetentionOff(t *testing.T) {
	if !(&Retention{}).Off() || (&Retention{Revisions: 1}).Off() || (&Retention{Period: time.Second}).Off() {
		t.Fatal("Off: only a retention of 0 in both modes is off")
	}
}
