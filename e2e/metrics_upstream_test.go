package e2e

import (
	"regexp"
	"sort"
	"strings"
	"testing"
)

// metricFamily is what dashboards and alerts depend on: a family's type and label names.
type metricFamily struct {
	typ    string
	labels map[string]bool
}

var (
	typeLine   = regexp.MustCompile(`^# TYPE (\S+) (\S+)$`)
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? `)
	labelName  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)
)

// etcdFamilies parses a /metrics page into its etcd_* families.
func etcdFamilies(text string) map[string]metricFamily {
	fams := map[string]metricFamily{}
	for _, l := range strings.Split(text, "\n") {
		if m := typeLine.FindStringSubmatch(l); m != nil {
			if strings.HasPrefix(m[1], "etcd") {
				fams[m[1]] = metricFamily{typ: m[2], labels: map[string]bool{}}
			}
			continue
		}
		m := sampleLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		name := m[1]
		f, ok := fams[name]
		if !ok {
			if f, ok = fams[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")]; !ok {
				continue
			}
		}
		for _, ln := range labelName.FindAllStringSubmatch(m[2], -1) {
			if ln[1] != "le" {
				f.labels[ln[1]] = true
			}
		}
	}
	return fams
}

// absentByDesign are upstream families ours does not have, each for a reason
// docs/compatibility.md gives: the v2 store, and the gRPC proxy (`etcd grpc-proxy`).
var absentByDesign = map[string]bool{
	"etcd_debugging_store_expires_total": true, "etcd_debugging_store_reads_total": true,
	"etcd_debugging_store_watch_requests_total": true, "etcd_debugging_store_watchers": true,
	"etcd_debugging_store_writes_total": true,
	"etcd_grpc_proxy_cache_hits_total":  true, "etcd_grpc_proxy_cache_keys_total": true,
	"etcd_grpc_proxy_cache_misses_total": true, "etcd_grpc_proxy_events_coalescing_total": true,
	"etcd_grpc_proxy_watchers_coalescing_total": true,
}

// TestMetricFamiliesMatchUpstream runs the same requests on upstream 3.6.16 and on ours, one
// member each, and fails when a family upstream exports is missing from ours or differs in
// type or label names.
func TestMetricFamiliesMatchUpstream(t *testing.T) {
	scrape := func(bin string) map[string]metricFamily {
		m := NewMember(t)
		m.Bin = bin
		m.Start()
		c := m.Client()
		if _, err := c.Put(Ctx(t), "k", "v"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Get(Ctx(t), "k"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Grant(Ctx(t), 30); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Compact(Ctx(t), 2); err != nil {
			t.Fatal(err)
		}
		fetch(t, "GET", m.MetricsURL+"/health", "", "")
		return etcdFamilies(metricsText(t, m))
	}
	up := scrape(UpstreamBinary(t, "etcd"))
	ours := scrape(Binary(t, "etcd"))
	if len(up) < 50 {
		t.Fatalf("parsed only %d families from upstream", len(up))
	}
	var problems []string
	for name, uf := range up {
		of, ok := ours[name]
		switch {
		case !ok && absentByDesign[name]:
		case !ok:
			problems = append(problems, "missing "+name)
		case of.typ != uf.typ:
			problems = append(problems, name+": type "+of.typ+", upstream "+uf.typ)
		default:
			for l := range uf.labels {
				if !of.labels[l] {
					problems = append(problems, name+": no label "+l)
				}
			}
			for l := range of.labels {
				if !uf.labels[l] {
					problems = append(problems, name+": extra label "+l)
				}
			}
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		t.Fatalf("metric families differ from upstream's:\n%s", strings.Join(problems, "\n"))
	}
}
