package e2e

import "testing"

// A line names its current patch release; anything else names none (the bench then takes the
// argument as a release).
func TestUpstreamOfLine(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"3.5", Upstream35Version},
		{"3.6", Upstream36Version},
		{"3.7", Upstream37Version},
		{"v3.6.16", ""},
		{"3.4", ""},
		{"", ""},
	} {
		if got := UpstreamOfLine(tc.line); got != tc.want {
			t.Errorf("UpstreamOfLine(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}
