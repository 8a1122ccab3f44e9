package e2e

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureDocNamesWhatExists keeps docs/architecture.md true: every file, package and
// function its tables and its path of a write name in backticks must exist where the text says.
//
// How a line is read, left to right: a package (`backend`, `upgradelab/lab`) or a file
// (`etcdserver/server.go`; a bare `apply.go` is in the package last named) sets where the names
// after it are looked up; a name (`propose`, `Cluster.Decide`, `wal.CheckCovers`) must then be
// declared in that file, or anywhere in that package when no file was named since. Flags,
// commands and other text in backticks are passed over.
func TestArchitectureDocNamesWhatExists(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	errs, checked := checkArchitectureDoc(root, string(data))
	for _, err := range errs {
		t.Error(err)
	}
	if checked < 100 {
		t.Fatalf("only %d names checked: the reader no longer understands the document", checked)
	}
	// The reader catches what goes stale: a moved function, a missing file, a wrong method.
	for _, stale := range []string{
		"| where? | `version/compat.go` `CheckStart` | `etcdserver/server.go` `restart` |",
		"| where? | `etcdserver/nosuchfile.go` | |",
		"| where? | `version/cluster.go` `Cluster.NoSuchMethod` | |",
		"4. `etcdserver/raft.go` `raftLoop` → `propose`: a moved step.",
	} {
		if errs, _ := checkArchitectureDoc(root, stale); len(errs) == 0 {
			t.Errorf("a stale line passed: %s", stale)
		}
	}
}

// checkArchitectureDoc checks every table row and numbered step of doc, returning what does
// not exist and how many names were checked.
func checkArchitectureDoc(root, doc string) (errs []error, checked int) {
	c := &docChecker{root: root, pkgs: map[string]*declIndex{}}
	for n, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "|") && !numberedStep.MatchString(line) {
			continue
		}
		c.dir, c.file = "", ""
		// In a table, each cell starts afresh from the row's first cell (its package).
		cells := []string{line}
		if strings.HasPrefix(line, "|") {
			cells = strings.Split(strings.Trim(line, "|"), "|")
		}
		first := ""
		for i, cell := range cells {
			if i > 0 {
				c.dir, c.file = first, ""
			}
			c.base = first
			prevEnd := 0
			for _, m := range backticked.FindAllStringSubmatchIndex(cell, -1) {
				tok, after := cell[m[2]:m[3]], cell[m[1]:]
				// A name right after a file (`server.go` `propose`, `a.go` `F`, `G`) is that
				// file's; one further on is the package's.
				if !fileBound.MatchString(cell[prevEnd:m[0]]) {
					c.file = ""
				}
				prevEnd = m[1]
				if strings.HasPrefix(after, " binary") || strings.HasPrefix(after, " command") {
					continue // a program's name
				}
				if err := c.token(tok); err != nil {
					errs = append(errs, fmt.Errorf("docs/architecture.md:%d: %w", n+1, err))
				}
				checked++
			}
			if i == 0 {
				first = c.dir
			}
		}
	}
	return errs, checked
}

var (
	backticked   = regexp.MustCompile("`([^`]+)`")
	numberedStep = regexp.MustCompile(`^\d+\. `)
	fileBound    = regexp.MustCompile(`^[\s,(→]*(and\s+)?$`)
	identifier   = regexp.MustCompile(`^([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?(?:\(\))?$`)
)

// docChecker follows where a line of the document points.
type docChecker struct {
	root string
	// dir is the package directory names are looked up in (relative to root); file, when set,
	// the file in it.
	dir, file string
	// base is the package of the row's first cell: its siblings are named by their last element.
	base string
	pkgs map[string]*declIndex
}

func (c *docChecker) token(tok string) error {
	switch {
	case strings.ContainsAny(tok, " =*<>") || strings.HasPrefix(tok, "-"):
		return nil // a command line, a flag or a pattern
	case strings.HasSuffix(tok, ".go"):
		for _, p := range c.candidates(tok) {
			if fi, err := os.Stat(filepath.Join(c.root, p)); err == nil && !fi.IsDir() {
				c.dir, c.file = filepath.Dir(p), p
				return nil
			}
		}
		return fmt.Errorf("file %s does not exist (looked in %v)", tok, c.candidates(tok))
	}
	for _, p := range c.candidates(tok) {
		if fi, err := os.Stat(filepath.Join(c.root, p)); err == nil && fi.IsDir() && hasGo(filepath.Join(c.root, p)) {
			c.dir, c.file = p, ""
			return nil
		}
	}
	m := identifier.FindStringSubmatch(tok)
	if m == nil || c.dir == "" {
		return nil
	}
	x, y := m[1], m[2]
	if y != "" {
		// pkg.Name: a package of the server (wal.CheckCovers), or Type.Method in the current one.
		for _, p := range []string{filepath.Join("server", x), filepath.Join(c.dir, x)} {
			if hasGo(filepath.Join(c.root, p)) {
				if !c.index(p).has(y, "") {
					return fmt.Errorf("%s: package %s declares no %s", tok, p, y)
				}
				return nil
			}
		}
		idx := c.index(c.dir)
		if idx.types[x] {
			if !idx.has(x+"."+y, c.file) {
				return fmt.Errorf("%s: no method %s of %s in %s", tok, y, x, c.where())
			}
		}
		return nil // a field or a variable's method: prose, not a declaration
	}
	if !c.index(c.dir).has(x, c.file) {
		return fmt.Errorf("%s is not declared in %s", tok, c.where())
	}
	return nil
}

func (c *docChecker) where() string {
	if c.file != "" {
		return c.file
	}
	return "package " + c.dir
}

// candidates are the paths a name in the document may mean: in the current package, the row's
// package or beside it, from the workspace root, or in the server module.
func (c *docChecker) candidates(tok string) []string {
	var out []string
	for _, d := range []string{c.dir, c.base, filepath.Dir(c.dir)} {
		if d != "" && d != "." {
			out = append(out, filepath.Join(d, tok))
		}
	}
	return append(out, tok, filepath.Join("server", tok))
}

func (c *docChecker) index(dir string) *declIndex {
	if idx, ok := c.pkgs[dir]; ok {
		return idx
	}
	idx := &declIndex{types: map[string]bool{}, decls: map[string][]string{}}
	c.pkgs[dir] = idx
	matches, _ := filepath.Glob(filepath.Join(c.root, dir, "*.go"))
	fs := token.NewFileSet()
	for _, path := range matches {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fs, path, nil, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		rel, _ := filepath.Rel(c.root, path)
		add := func(name string) { idx.decls[name] = append(idx.decls[name], rel) }
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				add(d.Name.Name)
				if d.Recv != nil && len(d.Recv.List) == 1 {
					if recv := receiverType(d.Recv.List[0].Type); recv != "" {
						add(recv + "." + d.Name.Name)
					}
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						add(s.Name.Name)
						idx.types[s.Name.Name] = true
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, f := range st.Fields.List {
								for _, n := range f.Names {
									add(n.Name)
									add(s.Name.Name + "." + n.Name)
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							add(n.Name)
						}
					}
				}
			}
		}
	}
	return idx
}

// declIndex is what one package declares: each name with the files that declare it.
type declIndex struct {
	types map[string]bool
	decls map[string][]string
}

// has reports whether name is declared, in file when file is set.
func (d *declIndex) has(name, file string) bool {
	for _, f := range d.decls[name] {
		if file == "" || f == file {
			return true
		}
	}
	return false
}

func receiverType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverType(e.X)
	case *ast.IndexExpr:
		return receiverType(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

func hasGo(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	return len(m) > 0
}

// TestDocGoMapsItsFiles keeps the file maps of the packages' doc.go true: every package of more
// than one non-test Go file has a doc.go with a "The files:" section, which holds the package's
// comment (no other file has one) and names every non-test Go file of its package, and each
// file it names exists.
func TestDocGoMapsItsFiles(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	maps := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() {
			checkPackageHasMap(t, path)
			return nil
		}
		if d.Name() != "doc.go" {
			return nil
		}
		doc, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(doc)
		at := strings.Index(text, "// The files:")
		if at < 0 {
			return nil
		}
		maps++
		section := text[at:]
		dir := filepath.Dir(path)
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			return err
		}
		for _, f := range files {
			name := filepath.Base(f)
			if name == "doc.go" || strings.HasSuffix(name, "_test.go") {
				continue
			}
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).MatchString(section) {
				t.Errorf("%s does not name %s", path, name)
			}
		}
		for _, named := range regexp.MustCompile(`\b[a-z0-9_]+\.go\b`).FindAllString(section, -1) {
			if _, err := os.Stat(filepath.Join(dir, named)); err != nil {
				t.Errorf("%s names %s, which is not in its package", path, named)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if maps == 0 {
		t.Fatal("no doc.go with a file map found: the test no longer finds them")
	}
}

// checkPackageHasMap requires a package of more than one non-test Go file to keep its comment
// and file map in doc.go.
func checkPackageHasMap(t *testing.T, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var sources []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") && filepath.Base(f) != "doc.go" {
			sources = append(sources, f)
		}
	}
	if len(sources) < 2 {
		return
	}
	doc, err := os.ReadFile(filepath.Join(dir, "doc.go"))
	if err != nil || !strings.Contains(string(doc), "// The files:") {
		t.Errorf("%s: a package of %d files needs a doc.go with its comment and a \"The files:\" map", dir, len(sources))
		return
	}
	fset := token.NewFileSet()
	for _, f := range sources {
		af, err := parser.ParseFile(fset, f, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if af.Doc != nil {
			t.Errorf("%s has a package comment; it belongs in doc.go", f)
		}
	}
}
