package runtimes

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
)

// imageFile is one file of a member's image: its path in the image and its content.
type imageFile struct {
	path string
	mode int64
	data []byte
}

// lddPath matches the libraries ldd resolves: "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6
// (0x...)" and the loader's own "/lib64/ld-linux-x86-64.so.2 (0x...)".
var lddPath = regexp.MustCompile(`(?m)(?:=>\s+|^\s*)(/\S+)\s+\(0x`)

// imageFiles is what an image needs to run the binary at path as /usr/local/bin/etcd: the binary,
// and for a dynamically linked one (a distribution's package, such as Debian's etcd-server)
// its loader and shared libraries at the paths the binary asks for them, as ldd resolves them
// on this machine. A static binary (CGO_ENABLED=0, as upstream's releases and ours) needs
// nothing else.
func imageFiles(path string) ([]imageFile, error) {
	exe, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	files := []imageFile{{path: "usr/local/bin/etcd", mode: 0o755, data: exe}}
	libs, err := sharedLibraries(path)
	if err != nil {
		return nil, err
	}
	for _, lib := range libs {
		data, err := os.ReadFile(lib) // through symlinks: the image holds the file at the name asked for
		if err != nil {
			return nil, fmt.Errorf("shared library %s of %s: %w", lib, path, err)
		}
		files = append(files, imageFile{path: filepath.Clean(lib)[1:], mode: 0o755, data: data})
	}
	return files, nil
}

// sharedLibraries lists the absolute paths of the loader and the libraries a dynamically linked
// ELF binary loads (none for a static one).
func sharedLibraries(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s is not an ELF binary: %w", path, err)
	}
	dynamic := slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
	f.Close()
	if !dynamic {
		return nil, nil
	}
	out, err := exec.Command("ldd", path).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s is dynamically linked and ldd cannot list its libraries (build it with CGO_ENABLED=0): %v: %s", path, err, out)
	}
	var libs []string
	for _, m := range lddPath.FindAllStringSubmatch(string(out), -1) {
		libs = append(libs, m[1])
	}
	if len(libs) == 0 {
		return nil, fmt.Errorf("%s is dynamically linked, and ldd named no library file: %s", path, out)
	}
	return libs, nil
}
