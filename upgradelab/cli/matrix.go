package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"etcdx/upgradelab/cluster"
	"etcdx/upgradelab/plan"
)

// Matrix is a matrix file: subject sets x plans x sizes (x seeds of generated plans). Each
// subject set says which binary plays each subject the plans name, so one plan runs against
// several implementations or builds, side by side.
type Matrix struct {
	// Subjects maps a set's name to its subjects: subject -> a binary path (relative paths are
	// taken from the matrix file's folder), upstream-X.Y.Z (built from the Go module proxy), or
	// a subject --bin-dir provides.
	Subjects map[string]map[string]string `json:"subjects"`
	// Plans are built-in plan names or plan files (relative to the matrix file).
	Plans []string `json:"plans"`
	// Members are the cluster sizes (default: each plan's own).
	Members []int `json:"members"`
	// Generate adds a generated plan per seed.
	Generate *MatrixGenerate `json:"generate"`
}

// MatrixGenerate is what upgradelab plan takes, with a list of seeds.
type MatrixGenerate struct {
	From      string   `json:"from"`
	Via       []string `json:"via"`
	To        string   `json:"to"`
	Faults    []string `json:"faults"`
	FaultRate *float64 `json:"faultRate"`
	Downgrade *bool    `json:"downgrade"`
	Members   int      `json:"members"`
	Seeds     []uint64 `json:"seeds"`
}

// LoadMatrix reads and checks a matrix file.
func LoadMatrix(path string) (*Matrix, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	var m Matrix
	if err := yaml.UnmarshalStrict(b, &m); err != nil {
		return nil, fmt.Errorf("matrix %s: %w", path, err)
	}
	if len(m.Subjects) == 0 {
		return nil, fmt.Errorf("matrix %s: no subject sets", path)
	}
	for set, subs := range m.Subjects {
		if set == "" || len(subs) == 0 {
			return nil, fmt.Errorf("matrix %s: subject set %q is empty", path, set)
		}
	}
	if len(m.Plans) == 0 && m.Generate == nil {
		return nil, fmt.Errorf("matrix %s: no plans and nothing to generate", path)
	}
	for _, n := range m.Members {
		if n < 1 {
			return nil, fmt.Errorf("matrix %s: members %d: want at least 1", path, n)
		}
	}
	if g := m.Generate; g != nil {
		if g.From == "" || g.To == "" || len(g.Seeds) == 0 {
			return nil, fmt.Errorf("matrix %s: generate needs from, to and seeds", path)
		}
		for _, s := range g.Seeds {
			if s == 0 {
				return nil, fmt.Errorf("matrix %s: seed 0 is not a seed", path)
			}
		}
	}
	dir := filepath.Dir(path)
	for i, p := range m.Plans {
		if strings.ContainsAny(p, "/.") && !filepath.IsAbs(p) {
			m.Plans[i] = filepath.Join(dir, p)
		}
	}
	for _, subs := range m.Subjects {
		for s, v := range subs {
			if strings.Contains(v, "/") && !filepath.IsAbs(v) {
				subs[s] = filepath.Join(dir, v)
			}
		}
	}
	return &m, nil
}

// Sets are the subject sets' names, sorted.
func (m *Matrix) Sets() []string {
	var out []string
	for s := range m.Subjects {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// plans loads the named plans and generates one per seed; levels gives the generator each
// subject's major.minor.
func (m *Matrix) plans(levels map[string]string) ([]*plan.Plan, error) {
	var out []*plan.Plan
	for _, name := range m.Plans {
		p, err := plan.Load(name)
		if err != nil {
			return nil, fmt.Errorf("matrix: %w", err)
		}
		out = append(out, p)
	}
	if g := m.Generate; g != nil {
		members := g.Members
		if members == 0 {
			members = 3
		}
		gen := plan.Generator{Members: members, Path: append(append([]string{g.From}, g.Via...), g.To),
			Levels: map[string]string{}, Downgrade: true, FaultRate: 0.5}
		if g.Downgrade != nil {
			gen.Downgrade = *g.Downgrade
		}
		if g.FaultRate != nil {
			gen.FaultRate = *g.FaultRate
		}
		faults := g.Faults
		if faults == nil {
			faults = []string{"kill", "freeze", "add", "compact", "defrag"}
		}
		for _, f := range faults {
			gen.Faults = append(gen.Faults, plan.StepKind(f))
		}
		for _, s := range gen.Path {
			if l, ok := levels[s]; ok {
				gen.Levels[s] = l
			} else if cluster.IsLevel(s) {
				gen.Levels[s] = s
			}
		}
		for _, seed := range g.Seeds {
			gen.Seed = seed
			p, err := gen.Generate()
			if err != nil {
				return nil, fmt.Errorf("matrix: generate with seed %d: %w", seed, err)
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// binaries resolves one subject set: each subject's binary from a path, a release the lab
// fetches (upstream-X.Y.Z, debian-X.Y.Z; by fetch), or what --bin-dir found.
func (m *Matrix) binaries(set string, found cluster.Binaries, fetch func(subject string) (string, error)) (cluster.Binaries, error) {
	bins := cluster.Binaries{}
	for subject, v := range m.Subjects[set] {
		path := ""
		switch {
		case isFetched(v):
			var err error
			if path, err = fetch(v); err != nil {
				return nil, fmt.Errorf("subject set %s: %s: %w", set, v, err)
			}
		case strings.Contains(v, "/"):
			path = v
		default:
			b, ok := found[v]
			if !ok {
				return nil, fmt.Errorf("subject set %s: %s=%s: not a path, an upstream-X.Y.Z, a debian-X.Y.Z or a subject --bin-dir has", set, subject, v)
			}
			bins[subject] = b
			continue
		}
		if err := bins.Add(subject, path); err != nil {
			return nil, fmt.Errorf("subject set %s: %s=%s: %w", set, subject, v, err)
		}
	}
	return bins, nil
}

// isFetched says whether the lab fetches v's binary itself.
func isFetched(v string) bool {
	_, ok := cluster.FetchedSubject(v)
	return ok
}

// levels guesses each subject's major.minor from a set without building anything: a level
// or a version names its own, upstream-X.Y.Z and debian-X.Y.Z their X.Y, a --bin-dir subject or a path what the
// binary reports.
func (m *Matrix) levels(set string, found cluster.Binaries) map[string]string {
	out := map[string]string{}
	for subject, v := range m.Subjects[set] {
		switch {
		case cluster.IsLevel(subject):
			out[subject] = subject
		case cluster.IsVersion(subject):
			out[subject] = subject[:strings.LastIndexByte(subject, '.')]
		case isFetched(v):
			ver, _ := cluster.FetchedSubject(v)
			out[subject] = ver[:strings.LastIndexByte(ver, '.')]
		case found[v].Level != "":
			out[subject] = found[v].Level
		case strings.Contains(v, "/"):
			if b, err := cluster.Inspect(v); err == nil {
				out[subject] = b.Level
			}
		}
	}
	return out
}
