package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := healthClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func httpDo(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHTTPEndpoints(t *testing.T) {
	m := NewMember(t)
	m.Start()
	var v map[string]string
	if err := json.Unmarshal([]byte(httpGet(t, m.ClientURL+"/version")), &v); err != nil {
		t.Fatal(err)
	}
	if v["etcdserver"] != ReleaseOf(CurrentLevel) || v["etcdcluster"] == "" || !strings.HasPrefix(v["implementation"], "etcdx ") {
		t.Fatalf("/version: %v", v)
	}
	if peer := httpGet(t, m.PeerURL+"/version"); !strings.Contains(peer, `"etcdserver":"`+ReleaseOf(CurrentLevel)+`"`) {
		t.Fatalf("peer /version: %s", peer)
	}
	if code, _ := httpDo(t, "POST", m.PeerURL+"/v3/kv/range", `{"key":"YQ=="}`); code != http.StatusNotFound {
		t.Fatalf("the peer listener served the client API (status %d)", code)
	}
	for _, u := range []string{"/health", "/health?serializable=true"} {
		code, body := httpDo(t, "GET", m.ClientURL+u, "")
		if code != 200 || strings.TrimSpace(body) != `{"health":"true","reason":""}` {
			t.Fatalf("%s: %d %s", u, code, body)
		}
	}
	if body := httpGet(t, m.ClientURL+"/livez"); body != "ok\n" {
		t.Fatalf("/livez: %q", body)
	}
	if body := httpGet(t, m.ClientURL+"/readyz?verbose"); !strings.Contains(body, "[+]linearizable_read ok") || !strings.HasSuffix(body, "\nok\n") {
		t.Fatalf("/readyz?verbose: %q", body)
	}

	// The JSON gateway: base64 keys and values, int64s as strings, proto field names.
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	code, body := httpDo(t, "POST", m.ClientURL+"/v3/kv/put", `{"key":"`+b64("gw")+`","value":"`+b64("hello")+`"}`)
	if code != 200 || !strings.Contains(body, `"revision":"2"`) {
		t.Fatalf("gateway put: %d %s", code, body)
	}
	_, body = httpDo(t, "POST", m.ClientURL+"/v3/kv/range", `{"key":"`+b64("gw")+`"}`)
	var rr struct {
		Kvs []struct {
			Key, Value     string
			CreateRevision string `json:"create_revision"`
		}
		Count string
	}
	if err := json.Unmarshal([]byte(body), &rr); err != nil || len(rr.Kvs) != 1 || rr.Kvs[0].Value != b64("hello") ||
		rr.Kvs[0].CreateRevision != "2" || rr.Count != "1" {
		t.Fatalf("gateway range: %s (%v)", body, err)
	}
	code, body = httpDo(t, "POST", m.ClientURL+"/v3/kv/range", `{"key":""}`)
	if code != 400 || !strings.Contains(body, "key is not provided") {
		t.Fatalf("gateway error mapping: %d %s", code, body)
	}
	if _, body = httpDo(t, "POST", m.ClientURL+"/v3/maintenance/status", `{}`); !strings.Contains(body, `"version":"`+ReleaseOf(CurrentLevel)+`"`) {
		t.Fatalf("gateway status: %s", body)
	}

	for _, u := range []string{m.ClientURL, m.MetricsURL} {
		metrics := httpGet(t, u+"/metrics")
		for _, want := range []string{"etcd_server_has_leader 1", "etcd_server_is_leader 1", "etcd_mvcc_db_total_size_in_bytes ",
			"etcd_server_proposals_committed_total ", "etcd_server_proposals_applied_total ", `etcd_server_version{server_version="` + ReleaseOf(CurrentLevel) + `"} 1`,
			"etcd_disk_wal_fsync_duration_seconds_bucket", "etcd_disk_backend_commit_duration_seconds_bucket", "etcd_server_leader_changes_seen_total 1",
			`grpc_server_handled_total{grpc_code="OK",grpc_method="Put",grpc_service="etcdserverpb.KV",grpc_type="unary"} 1`,
			`grpc_server_started_total{grpc_method="Watch",grpc_service="etcdserverpb.Watch",grpc_type="bidi_stream"}`,
			"etcd_network_client_grpc_received_bytes_total", "etcd_network_client_grpc_sent_bytes_total", "process_resident_memory_bytes"} {
			if !strings.Contains(metrics, want) {
				t.Fatalf("%s/metrics lacks %q", u, want)
			}
		}
	}
	if code, _ := httpDo(t, "GET", m.MetricsURL+"/health", ""); code != 200 {
		t.Fatalf("metrics listener /health: %d", code)
	}
}

// probeAnswers asks a member's health endpoints a list of questions, healthy and then with the
// CORRUPT alarm raised, and returns each answer: status, the headers a probe reads, and the body
// with its check lines sorted (upstream prints them in map order).
func probeAnswers(t *testing.T, m *Member) []string {
	t.Helper()
	paths := []string{"/health", "/health?serializable=true", "/health?exclude=CORRUPT", "/livez", "/livez?verbose",
		"/readyz", "/readyz?verbose", "/readyz?verbose&exclude=data_corruption", "/readyz?exclude=nope",
		"/readyz/data_corruption", "/readyz/non_learner?verbose", "/livez/serializable_read", "/readyz/nope"}
	ask := func(phase string) []string {
		var out []string
		for _, p := range paths {
			resp, err := http.Get(m.ClientURL + p)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			lines := strings.Split(string(b), "\n")
			sort.Strings(lines)
			out = append(out, fmt.Sprintf("%s %s: %d %s %s %q", phase, p, resp.StatusCode, resp.Header.Get("Content-Type"),
				resp.Header.Get("X-Content-Type-Options"), strings.Join(lines, "|")))
		}
		return out
	}
	out := ask("healthy")
	if _, err := m.Client().Maintenance.AlarmList(Ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := pb.NewMaintenanceClient(m.Client().ActiveConnection()).Alarm(Ctx(t), &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, Alarm: pb.AlarmType_CORRUPT}); err != nil {
		t.Fatal(err)
	}
	return append(out, ask("corrupt")...)
}

// TestHealthProbesAsUpstream: /health, /livez and /readyz (verbose, excluded checks, each check
// on its own path, the CORRUPT alarm) answer as upstream 3.7.3: status, content type, the lines.
func TestHealthProbesAsUpstream(t *testing.T) { besideUpstream(t, probeAnswers) }
