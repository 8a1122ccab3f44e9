package failpoint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNamesAreUpstreams: every point is listed once, with a level upstream had it at.
func TestNamesAreUpstreams(t *testing.T) {
	seen := map[Name]bool{}
	for _, p := range All {
		if seen[p.Name] {
			t.Errorf("%s listed twice", p.Name)
		}
		seen[p.Name] = true
		if p.Since != "3.5" && p.Since != "3.7" {
			t.Errorf("%s: since %q", p.Name, p.Since)
		}
		if p.At == "" {
			t.Errorf("%s: no description", p.Name)
		}
	}
	// Upstream's releases declare 44 (3.5.35), 43 (3.6.16) and 47 (3.7.3) points.
	for level, want := range map[string]int{"3.5": 44, "3.6": 43, "3.7": 47} {
		n := 0
		for _, p := range All {
			if p.InLevel(level) {
				n++
			}
		}
		if n != want {
			t.Errorf("level %s: %d points, upstream's has %d", level, n, want)
		}
	}
}

// TestEveryPointHasAPlace: each point's constant is used somewhere in the server, so a name
// upstream's tools set does something in ours.
func TestEveryPointHasAPlace(t *testing.T) {
	fs := token.NewFileSet()
	f, err := parser.ParseFile(fs, "names.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []string
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, s := range g.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					consts = append(consts, n.Name)
				}
			}
		}
	}
	if len(consts) != len(All) {
		t.Fatalf("%d constants, %d points", len(consts), len(All))
	}
	var src strings.Builder
	err = filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		src.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range consts {
		if !regexp.MustCompile(`failpoint\.(At|Hit|Value)\(failpoint\.` + c + `\)`).MatchString(src.String()) {
			t.Errorf("failpoint %s is declared but nowhere evaluated", c)
		}
	}
}
