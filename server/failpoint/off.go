//go:build !failpoints

package failpoint

import "errors"

// Enabled reports whether this binary was built with failpoints.
const Enabled = false

// Hit evaluates the point: with failpoints built in and the point set, it runs the point's terms
// (panic, sleep, print, ...) and reports whether they returned a value. Here it is always false,
// and a call costs nothing: the compiler removes it and the branch it guards.
func Hit(Name) bool { return false }

// Value is Hit for points whose terms return a text (return("...")).
func Value(Name) (string, bool) { return "", false }

// At evaluates a point whose terms act rather than return (panic, sleep, print); nothing here.
func At(Name) {}

// errNotBuilt is what setting a point answers in a binary without failpoints.
var errNotBuilt = errors.New("failpoints are not built in (build with -tags failpoints)")

// Set would give a point terms; this binary has none.
func Set(Name, string) error { return errNotBuilt }

// Clear would remove a point's terms; this binary has none.
func Clear(Name) error { return errNotBuilt }
