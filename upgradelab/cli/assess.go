package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-semver/semver"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"etcdx/upgradelab/assess"
	"etcdx/upgradelab/plan"
	"etcdx/upgradelab/releases"
)

// ourLevels are the levels this tree builds (make build): a hop to one of their newest
// patches may be taken by ours.
var ourLevels = map[string]bool{"3.5": true, "3.6": true, "3.7": true}

// connFlags say how to reach a live cluster, as etcdctl's flags do (assess and guide).
type connFlags struct {
	endpoints               []string
	cacert, cert, key, user string
	insecureSkipVerify      bool
	timeout                 time.Duration
}

func (c *connFlags) add(fs *pflag.FlagSet) {
	fs.StringSliceVar(&c.endpoints, "endpoints", nil, "Client URLs of the live cluster (as etcdctl's --endpoints).")
	fs.StringVar(&c.cacert, "cacert", "", "CA bundle that verifies the members' certificates.")
	fs.StringVar(&c.cert, "cert", "", "Client certificate.")
	fs.StringVar(&c.key, "key", "", "Client certificate's key.")
	fs.BoolVar(&c.insecureSkipVerify, "insecure-skip-tls-verify", false, "Do not verify the members' certificates.")
	fs.StringVar(&c.user, "user", "", "USER:PASSWORD when authentication is on.")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Second, "Bound of each request.")
}

// resolve is the endpoints with their TLS and credentials.
func (c *connFlags) resolve() (assess.Endpoints, error) {
	tlsCfg, err := c.tlsConfig()
	if err != nil {
		return assess.Endpoints{}, err
	}
	user, password, _ := strings.Cut(c.user, ":")
	return assess.Endpoints{Endpoints: c.endpoints, TLS: tlsCfg, Username: user, Password: password, Timeout: c.timeout}, nil
}

// assessFlags are upgradelab assess's settings.
type assessFlags struct {
	connFlags
	dataDirs, configs       []string
	to, from, writeOut      string
	planOut, subjects, mode string
}

func assessCmd(args []string, stdout, stderr io.Writer) int {
	var a assessFlags
	fs := pflag.NewFlagSet("upgradelab assess", pflag.ContinueOnError)
	a.connFlags.add(fs)
	fs.StringArrayVar(&a.dataDirs, "data-dir", nil, "A stopped member's data dir, or a copy of one (repeatable); read, never changed.")
	fs.StringArrayVar(&a.configs, "config", nil, "A member's flags: an etcd config file, a static pod manifest or /etc/default/etcd (repeatable).")
	fs.StringVar(&a.to, "to", "", "The version to go to: a release line (3.7: its newest patch) or a patch (3.7.3).")
	fs.StringVar(&a.from, "from", "", "The version the members run, when no live member says (data dirs and configs only).")
	fs.StringVarP(&a.writeOut, "write-out", "w", "text", "Output: text or json.")
	fs.StringVar(&a.planOut, "plan-out", "", "Write the path as a lab plan to this file (upgradelab run --plan FILE rehearses it).")
	fs.StringVar(&a.subjects, "subjects", "upstream", "Who runs each hop of the written plan: upstream (upstream's releases) or ours (this tree's levels where one matches the hop).")
	fs.StringVar(&a.mode, "mode", "in-place", "How the written plan moves members up: in-place (swap binaries) or replacement (add a learner, promote it, remove an old member).")
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "upgradelab assess: "+format+"\n", args...)
		return 2
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	if len(a.endpoints) == 0 && len(a.dataDirs) == 0 {
		return fail("give --endpoints of a live cluster, --data-dir of stopped members, or both")
	}
	if a.writeOut != "text" && a.writeOut != "json" {
		return fail("--write-out %q: want text or json", a.writeOut)
	}
	if a.subjects != "upstream" && a.subjects != "ours" {
		return fail("--subjects %q: want upstream or ours", a.subjects)
	}
	if a.mode != "in-place" && a.mode != "replacement" {
		return fail("--mode %q: want in-place or replacement", a.mode)
	}
	k, err := releases.Load()
	if err != nil {
		return fail("%v", err)
	}
	target, err := resolveTarget(k, a.to)
	if err != nil {
		return fail("--to: %v", err)
	}

	facts, err := a.collect()
	if err != nil {
		return fail("%v", err)
	}
	if a.from != "" {
		if _, err := releases.ParseVersion(a.from); err != nil {
			return fail("--from: %v", err)
		}
		for i := range facts.Members {
			if facts.Members[i].Live == nil && facts.Members[i].DataDir != nil {
				facts.Members[i].Live = &assess.Live{Endpoint: "(--from)", Version: a.from}
			}
		}
	}
	report := assess.Evaluate(k, facts, target)

	if a.writeOut == "json" {
		b, _ := json.MarshalIndent(struct {
			Facts  assess.Facts  `json:"facts"`
			Report assess.Report `json:"report"`
		}{facts, report}, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	} else if err := assess.WriteText(stdout, facts, report); err != nil {
		return fail("%v", err)
	}
	if a.planOut != "" {
		if err := a.writePlan(k, facts, report); err != nil {
			return fail("--plan-out: %v", err)
		}
		fmt.Fprintf(stderr, "upgradelab assess: wrote the path as a lab plan to %s (rehearse it: upgradelab run --plan %s)\n", a.planOut, a.planOut)
	}
	if report.Verdict == assess.Block {
		return 1
	}
	return 0
}

// resolveTarget reads --to: a line means its newest patch.
func resolveTarget(k *releases.Knowledge, to string) (*semver.Version, error) {
	if to == "" {
		return nil, fmt.Errorf("required: the version to assess the path to (e.g. 3.7)")
	}
	if strings.Count(to, ".") == 1 {
		return k.Latest(strings.TrimPrefix(to, "v"))
	}
	return releases.ParseVersion(to)
}

// collect gathers the facts from every source given.
func (a *assessFlags) collect() (assess.Facts, error) {
	var f assess.Facts
	if len(a.endpoints) > 0 {
		ep, err := a.resolve()
		if err != nil {
			return f, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*a.timeout)
		defer cancel()
		if f, err = assess.CollectLive(ctx, ep); err != nil {
			return f, err
		}
	}
	for _, d := range a.dataDirs {
		if err := assess.AddDataDir(&f, d, ""); err != nil {
			return f, err
		}
	}
	for _, c := range a.configs {
		if err := assess.AddFlags(&f, c); err != nil {
			return f, fmt.Errorf("--config %s: %w", c, err)
		}
	}
	return f, nil
}

func (c *connFlags) tlsConfig() (*tls.Config, error) {
	if c.cacert == "" && c.cert == "" && !c.insecureSkipVerify && !hasScheme(c.endpoints, "https") {
		return nil, nil
	}
	cfg := &tls.Config{InsecureSkipVerify: c.insecureSkipVerify} //nolint:gosec // asked for by flag
	if c.cacert != "" {
		pem, err := os.ReadFile(c.cacert)
		if err != nil {
			return nil, fmt.Errorf("--cacert: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cacert %s: no certificate in it", c.cacert)
		}
	}
	if c.cert != "" || c.key != "" {
		pair, err := tls.LoadX509KeyPair(c.cert, c.key)
		if err != nil {
			return nil, fmt.Errorf("--cert/--key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

func hasScheme(endpoints []string, scheme string) bool {
	for _, e := range endpoints {
		if strings.HasPrefix(e, scheme+"://") {
			return true
		}
	}
	return false
}

// writePlan writes the report's path as a lab plan: the cluster starts at the lowest version
// that runs today, with as many members as the cluster lists.
func (a *assessFlags) writePlan(k *releases.Knowledge, f assess.Facts, r assess.Report) error {
	if r.PathError != "" {
		return fmt.Errorf("no path: %s", r.PathError)
	}
	if len(r.Versions) == 0 {
		return fmt.Errorf("no member's version is known (give --from)")
	}
	low, err := releases.ParseVersion(r.Versions[0])
	if err != nil {
		return err
	}
	members := 0
	for _, m := range f.Members {
		if m.Listed || m.DataDir != nil {
			members++
		}
	}
	subject := func(v *semver.Version) string {
		minor := releases.MinorOf(v)
		if latest, err := k.Latest(minor); a.subjects == "ours" && ourLevels[minor] && err == nil && latest.Equal(*v) {
			return minor
		}
		if minor == "3.4" {
			// Upstream's 3.4 does not build from the Go module proxy; Debian packages it.
			return "debian-" + v.String()
		}
		return "upstream-" + v.String()
	}
	route := plan.Route{Name: "assessed-path", Members: max(members, 1), Start: subject(low), StartLevel: releases.MinorOf(low),
		Replacement: a.mode == "replacement",
		Description: fmt.Sprintf("The path upgradelab assess planned from %s to %s (%s hops; members start at the lowest version found).",
			strings.Join(slices.Compact(slices.Clone(r.Versions)), ", "), r.Target, a.subjects)}
	for i, h := range r.Path {
		_, snapshot := k.SnapshotAfter(r.Path, i)
		route.Hops = append(route.Hops, plan.RouteHop{Kind: h.Kind, Subject: subject(h.To), Level: releases.MinorOf(h.To), Snapshot: snapshot})
	}
	p, err := route.Plan()
	if err != nil {
		return err
	}
	b, err := yaml.Marshal(p)
	if err != nil {
		return err
	}
	return os.WriteFile(a.planOut, b, 0o644)
}
