package e2e

import (
	"fmt"
	"os"
	"testing"
)

// noSkipVar, set to 1 (CI sets it), turns every "this machine cannot run the test" into a
// failure: an upstream release the module proxy cannot give, no network namespaces, no root.
// A developer's machine without them skips, saying why.
const noSkipVar = "E2E_NO_SKIP"

// cannotRun stops a test that needs what this machine lacks: a skip, or a failure under
// E2E_NO_SKIP=1.
func cannotRun(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(noSkipVar) == "1" {
		t.Fatalf("%s (%s=1: every test must run here)", msg, noSkipVar)
	}
	t.Skip(msg)
}
