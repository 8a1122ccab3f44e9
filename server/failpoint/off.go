//go:build !failpoints

package failpoint

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
