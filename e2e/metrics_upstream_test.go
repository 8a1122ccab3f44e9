package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
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

// comparedPrefixes are the families compared with upstream's: etcd's own, the file descriptor
// gauges and the /metrics handler's counters (upstream's TestNoMetricsMissing lists them). Go's
// and the process collector's depend on the Go release and client library of each build.
var comparedPrefixes = []string{"etcd", "os_fd_", "promhttp_metric_handler_"}

// etcdFamilies parses a /metrics page into the families compared with upstream's.
func etcdFamilies(text string) map[string]metricFamily {
	fams := map[string]metricFamily{}
	for _, l := range strings.Split(text, "\n") {
		if m := typeLine.FindStringSubmatch(l); m != nil {
			if slices.ContainsFunc(comparedPrefixes, func(p string) bool { return strings.HasPrefix(m[1], p) }) {
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

// idleFamilies are the families of upstream's v2 store and gRPC proxy, which a member exports
// at 0: ours must export each with the same sample.
var idleFamilies = []string{"etcd_debugging_store_expires_total", "etcd_debugging_store_watch_requests_total",
	"etcd_debugging_store_watchers", "etcd_grpc_proxy_cache_hits_total", "etcd_grpc_proxy_cache_keys_total",
	"etcd_grpc_proxy_cache_misses_total", "etcd_grpc_proxy_events_coalescing_total", "etcd_grpc_proxy_watchers_coalescing_total"}

// compareFamilies lists how ours differs from upstream: a family upstream exports that ours
// lacks, or one whose type or label names differ.
func compareFamilies(up, ours map[string]metricFamily) []string {
	var problems []string
	for name, uf := range up {
		of, ok := ours[name]
		switch {
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
	return problems
}

// TestMetricFamiliesMatchUpstream runs the same requests on upstream's release and on ours at each
// level (3.7.3, 3.6.16, 3.5.35), one member each, and fails when a family upstream exports is
// missing from ours or differs in type or label names, or an idle family's sample differs.
func TestMetricFamiliesMatchUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	for _, c := range []struct{ level, upstream string }{{CurrentLevel, Upstream37Version}, {LastReleaseLevel, Upstream36Version}, {OldestLevel, Upstream35Version}} {
		t.Run(c.level, func(t *testing.T) {
			metricFamiliesAsUpstream(t, ServerAt(t, c.level), UpstreamBinaryAt(t, c.upstream, "etcd"))
		})
	}
}

func metricFamiliesAsUpstream(t *testing.T, oursBin, upBin string) {
	var texts []string
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
		text := metricsText(t, m)
		texts = append(texts, text)
		return etcdFamilies(text)
	}
	up := scrape(upBin)
	ours := scrape(oursBin)
	if len(up) < 50 {
		t.Fatalf("parsed only %d families from upstream", len(up))
	}
	if problems := compareFamilies(up, ours); len(problems) > 0 {
		t.Fatalf("metric families differ from upstream's:\n%s", strings.Join(problems, "\n"))
	}
	for _, f := range idleFamilies {
		sample := regexp.MustCompile(`(?m)^` + f + ` .*$`)
		if u, o := sample.FindString(texts[0]), sample.FindString(texts[1]); u == "" || u != o {
			t.Errorf("%s: ours %q, upstream %q", f, o, u)
		}
	}
}

// TestPeerMetricFamiliesMatchUpstream does the same for three-member clusters, where the
// etcd_network_peer_* families the etcd-mixin alerts on appear; ours also probes round trips.
func TestPeerMetricFamiliesMatchUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	scrape := func(bin string) (map[string]metricFamily, string) {
		c := NewCluster(t, 3)
		for _, m := range c.Members {
			m.Bin = bin
		}
		c.Start()
		for i := 0; i < 20; i++ {
			if _, err := c.Client().Put(Ctx(t), fmt.Sprint(i), "v"); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(6 * time.Second) // past one round-trip probe
		text := metricsText(t, c.Members[0])
		return etcdFamilies(text), text
	}
	up, upText := scrape(UpstreamBinary(t, "etcd"))
	if _, ok := up["etcd_network_peer_sent_bytes_total"]; !ok {
		t.Fatalf("upstream's cluster exported no peer families yet:\n%s", upText)
	}
	ours, text := scrape(Binary(t, "etcd"))
	if problems := compareFamilies(up, ours); len(problems) > 0 {
		t.Fatalf("metric families differ from upstream's:\n%s", strings.Join(problems, "\n"))
	}
	for _, f := range []string{"etcd_network_peer_sent_bytes_total", "etcd_network_peer_received_bytes_total",
		"etcd_network_active_peers", "etcd_network_peer_round_trip_time_seconds"} {
		if _, ok := ours[f]; !ok {
			t.Errorf("no %s:\n%s", f, text)
		}
	}
}
