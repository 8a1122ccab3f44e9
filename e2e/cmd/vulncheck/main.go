// Command vulncheck runs govulncheck on each module of the workspace against a vulnerability
// database on disk and judges what it finds: a vulnerable function of a required module that our
// code reaches fails the check; one in the Go standard library is the toolchain's, which a
// module cannot fix, so it is reported with the Go release that fixes it and fails only with
// -toolchain. Vulnerabilities in code we do not reach are counted, not listed.
//
//	go run ./e2e/cmd/vulncheck -govulncheck BIN -db DIR pkg server ...
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// finding is the part of govulncheck's JSON finding this check reads.
type finding struct {
	OSV          string `json:"osv"`
	FixedVersion string `json:"fixed_version"`
	Trace        []struct {
		Module   string `json:"module"`
		Version  string `json:"version"`
		Package  string `json:"package"`
		Function string `json:"function"`
		Receiver string `json:"receiver"`
		Position *struct {
			Filename string `json:"filename"`
			Line     int    `json:"line"`
		} `json:"position"`
	} `json:"trace"`
}

// reached is one vulnerability our code calls, with where the first call is.
type reached struct {
	osv, module, version, fixed, symbol, from string
}

func main() {
	bin := flag.String("govulncheck", "govulncheck", "the govulncheck binary")
	db := flag.String("db", "", "the vulnerability database directory (govulncheck -db file://...)")
	toolchain := flag.Bool("toolchain", false, "also fail on vulnerabilities of the Go standard library")
	flag.Parse()
	if *db == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: vulncheck -db DIR [-govulncheck BIN] [-toolchain] MODULE...")
		os.Exit(2)
	}
	dbURL := "file://" + mustAbs(*db)
	failed := false
	mods := flag.Args()
	// The modules are checked side by side (govulncheck's analysis leaves CPUs idle), and
	// reported in the order given.
	type result struct {
		found     []reached
		unreached int
		err       error
	}
	results := make([]result, len(mods))
	sem := make(chan struct{}, max(2, runtime.NumCPU()))
	var wg sync.WaitGroup
	for i, mod := range mods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := &results[i]
			r.found, r.unreached, r.err = check(*bin, dbURL, mod)
		}()
	}
	wg.Wait()
	for i, mod := range mods {
		found, unreached, err := results[i].found, results[i].unreached, results[i].err
		if err != nil {
			fmt.Fprintf(os.Stderr, "vulncheck %s: %v\n", mod, err)
			os.Exit(1)
		}
		for _, r := range found {
			std := r.module == "stdlib"
			verdict := "FAIL"
			if std && !*toolchain {
				verdict = "toolchain"
			}
			if verdict == "FAIL" {
				failed = true
			}
			fix := "no fix yet"
			if r.fixed != "" {
				fix = "fixed in " + r.fixed
			}
			fmt.Printf("%s: %s %s in %s@%s (%s), %s, called from %s\n", mod, verdict, r.osv, r.symbol, r.module, r.version, fix, r.from)
		}
		fmt.Printf("%s: %d vulnerabilities reached, %d in code not reached\n", mod, len(found), unreached)
	}
	if failed {
		fmt.Println("vulncheck: a required module has a vulnerability our code reaches: upgrade it")
		os.Exit(1)
	}
}

// check runs govulncheck on the module in dir and returns the vulnerabilities our code reaches
// (one per OSV entry and module) and how many more it found in code it does not reach.
func check(bin, dbURL, dir string) ([]reached, int, error) {
	cmd := exec.Command(bin, "-db", dbURL, "-format", "json", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s", err, stderr.String())
	}
	seen := map[string]*reached{}
	all := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var msg struct {
			Finding *finding `json:"finding"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, 0, fmt.Errorf("read govulncheck's output: %w", err)
		}
		f := msg.Finding
		if f == nil || len(f.Trace) == 0 {
			continue
		}
		all[f.OSV] = true
		top := f.Trace[0]
		if top.Function == "" {
			continue // a vulnerable package or module we import but do not call into
		}
		key := f.OSV + " " + top.Module
		if seen[key] != nil {
			continue
		}
		r := &reached{osv: f.OSV, module: top.Module, version: top.Version, fixed: f.FixedVersion, symbol: top.Package + "." + symbol(top.Receiver, top.Function)}
		// The last frame is our code, where the path into the vulnerable symbol starts.
		if last := f.Trace[len(f.Trace)-1]; last.Position != nil {
			r.from = fmt.Sprintf("%s:%d", filepath.Base(last.Position.Filename), last.Position.Line)
		} else {
			r.from = last.Package + "." + last.Function
		}
		seen[key] = r
	}
	var found []reached
	called := map[string]bool{}
	for _, r := range seen {
		found = append(found, *r)
		called[r.osv] = true
	}
	sort.Slice(found, func(i, j int) bool { return found[i].osv < found[j].osv })
	return found, len(all) - len(called), nil
}

func symbol(recv, fn string) string {
	if recv == "" {
		return fn
	}
	return strings.TrimPrefix(recv, "*") + "." + fn
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	return a
}
