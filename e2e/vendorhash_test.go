package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nix-community/go-nix/pkg/nar"
)

// flake.nix builds from the workspace vendored by `go work vendor`, checked against
// nix/vendor-hash. A dependency change that forgets `make nix-hash` fails here, not in a user's
// `nix build`. The hash is Nix's: SHA-256 of the vendor tree's NAR serialisation.
func TestNixVendorHashIsCurrent(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(root, "nix", "vendor-hash"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "vendor")
	cmd := exec.Command("go", "work", "vendor", "-o", out)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go work vendor: %v\n%s", err, b)
	}
	h := sha256.New()
	if err := nar.DumpPath(h, out); err != nil {
		t.Fatal(err)
	}
	got := "sha256-" + base64.StdEncoding.EncodeToString(h.Sum(nil))
	if got != strings.TrimSpace(string(want)) {
		t.Fatalf("nix/vendor-hash is stale: it says %s, the workspace vendors to %s; run `make nix-hash`",
			strings.TrimSpace(string(want)), got)
	}
}
