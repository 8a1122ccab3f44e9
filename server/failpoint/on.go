//go:build failpoints

package failpoint

import (
	gofail "go.etcd.io/gofail/runtime"

	"etcdx/pkg/buildinfo"
)

// Enabled reports whether this binary was built with failpoints.
const Enabled = true

// registered holds the gofail failpoint of each point of this binary's level. gofail's
// registry is the process's (GOFAIL_HTTP serves it), so this one is too; it is filled once,
// before main, and only read after.
var registered = map[Name]*gofail.Failpoint{}

func init() {
	for _, p := range All {
		if p.InLevel(buildinfo.Level) {
			registered[p.Name] = gofail.NewFailpoint(string(p.Name))
		}
	}
}

// Hit evaluates the point's terms, if set: panic, sleep and print act here; it reports whether
// the terms returned a value (return, or return(...)).
func Hit(n Name) bool {
	_, ok := Value(n)
	return ok
}

// Value evaluates the point's terms and returns the text they returned, if any.
func Value(n Name) (string, bool) {
	fp := registered[n]
	if fp == nil {
		return "", false
	}
	v, err := fp.Acquire()
	if err != nil {
		return "", false
	}
	s, _ := v.(string)
	return s, true
}

// At evaluates a point whose terms act rather than return: panic, sleep, print.
func At(n Name) { Value(n) }

// Set gives a point terms from now on, in gofail's syntax (what GOFAIL_HTTP takes), e.g.
// "sleep(10)". The registry is the process's: in-process members share it.
func Set(n Name, terms string) error { return gofail.Enable(string(n), terms) }

// Clear removes a point's terms.
func Clear(n Name) error { return gofail.Disable(string(n)) }
