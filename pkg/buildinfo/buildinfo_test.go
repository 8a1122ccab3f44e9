package buildinfo

import (
	"strings"
	"testing"
)

func TestUpstreamRelease(t *testing.T) {
	for level, want := range map[string]string{
		"3.5": "3.5.35", // upstream's current patch of each line
		"3.6": "3.6.16",
		"3.7": "3.7.3",
		"3.8": "3.8.0", // a level the tree does not implement (the server refuses it at start)
	} {
		if got := UpstreamRelease(level); got != want {
			t.Errorf("UpstreamRelease(%s) = %s, want %s", level, got, want)
		}
	}
	// An unstamped build is the newest level and reports its upstream release.
	if Version != UpstreamRelease(Level) || APIVersion != Level {
		t.Errorf("Version %s, APIVersion %s for level %s", Version, APIVersion, Level)
	}
	if id := Identity(); !strings.HasPrefix(id, "etcdx "+Release+" (git ") {
		t.Errorf("Identity() = %q", id)
	}
}

func TestLevelAtLeast(t *testing.T) {
	for _, c := range []struct {
		level, want string
		ok          bool
	}{{"3.7", "3.7", true}, {"3.8", "3.7", true}, {"4.0", "3.7", true}, {"3.6", "3.7", false}, {"3.10", "3.7", true}, {"x", "3.5", false}} {
		if got := LevelAtLeast(c.level, c.want); got != c.ok {
			t.Errorf("LevelAtLeast(%s, %s) = %v", c.level, c.want, got)
		}
	}
}
