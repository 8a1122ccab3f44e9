package etcdserver

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
