package runtimes

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestImageFiles: a static binary's image holds the binary alone; a dynamically linked one's
// also its loader and libc, at the absolute paths it asks for them (relative in the image).
func TestImageFiles(t *testing.T) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	static := filepath.Join(strings.TrimSpace(string(goroot)), "bin", "gofmt") // Go's own tools are static
	files, err := imageFiles(static)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].path != "usr/local/bin/etcd" || files[0].mode != 0o755 {
		t.Errorf("a static binary's image: %v", paths(files))
	}
	dynamic := "/bin/ls"
	if _, err := os.Stat(dynamic); err != nil {
		t.Skipf("no %s here to stand for a dynamically linked binary", dynamic)
	}
	files, err = imageFiles(dynamic)
	if err != nil {
		t.Fatal(err)
	}
	got := paths(files)
	if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, "libc.so") }) ||
		!slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, "ld-linux") }) {
		t.Errorf("a dynamically linked binary's image lacks its loader or libc: %v", got)
	}
	for _, f := range files {
		if strings.HasPrefix(f.path, "/") || len(f.data) == 0 {
			t.Errorf("%s: an image path must be relative and the file whole (%d bytes)", f.path, len(f.data))
		}
	}
	if _, err := imageFiles("/etc/hostname"); err == nil {
		t.Error("a file that is no ELF binary went into an image")
	}
}

func paths(files []imageFile) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.path)
	}
	return out
}
