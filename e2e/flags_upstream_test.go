package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sys/unix"
)

var helpFlag = regexp.MustCompile(`(?m)^\s+--([a-z0-9-]+)`)

func helpFlags(t *testing.T, bin string) map[string]bool {
	t.Helper()
	out, err := exec.Command(bin, "--help").Output()
	if err != nil {
		t.Fatalf("%s --help: %v", bin, err)
	}
	m := map[string]bool{}
	for _, f := range helpFlag.FindAllStringSubmatch(string(out), -1) {
		m[f[1]] = true
	}
	return m
}

// ourOwnFlags are flags ours takes that upstream's --help does not list: --lease-checkpoint-
// interval (upstream has no flag for it; below 3.7 also its --experimental- spelling), and the
// two upstream documents in its usage lines rather than its flag list.
var ourOwnFlags = map[string]bool{"lease-checkpoint-interval": true, "experimental-lease-checkpoint-interval": true,
	"config-file": true, "version": true}

// TestHelpListsEveryUpstreamFlag: at 3.5, 3.6 and 3.7, `etcd --help` of ours and of upstream's
// release of that line list the same flags (ours may add only ourOwnFlags); so 3.7 refuses the
// --experimental-* flags upstream 3.7 removed, 3.6 still takes them, and 3.5 has them as its own
// names, without 3.6's. Each flag is also read
// from its ETCD_* variable.
func TestHelpListsEveryUpstreamFlag(t *testing.T) {
	for _, c := range []struct{ level, upstream string }{{OldestLevel, Upstream35Version}, {LastReleaseLevel, Upstream36Version}, {CurrentLevel, Upstream37Version}} {
		up := helpFlags(t, UpstreamBinaryAt(t, c.upstream, "etcd"))
		ours := helpFlags(t, ServerAt(t, c.level))
		if len(up) < 100 {
			t.Fatalf("parsed only %d flags from upstream %s's --help", len(up), c.upstream)
		}
		var missing, extra []string
		for f := range up {
			if !ours[f] {
				missing = append(missing, f)
			}
		}
		for f := range ours {
			if !up[f] && !ourOwnFlags[f] {
				extra = append(extra, f)
			}
		}
		sort.Strings(missing)
		sort.Strings(extra)
		if len(missing) > 0 || len(extra) > 0 {
			t.Errorf("level %s: flags upstream %s has and ours lacks: %v; flags ours has and upstream lacks: %v", c.level, c.upstream, missing, extra)
		}
	}
	// A removed flag is refused at 3.7 as upstream 3.7 refuses it: the same text and exit status.
	for _, c := range []struct {
		bin  string
		code int
	}{{UpstreamBinaryAt(t, Upstream37Version, "etcd"), 2}, {ServerAt(t, CurrentLevel), 2}} {
		out, err := exec.Command(c.bin, "--experimental-compaction-batch-limit", "10", "--data-dir", filepath.Join(t.TempDir(), "d")).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != c.code || !strings.HasPrefix(string(out), "flag provided but not defined: -experimental-compaction-batch-limit\n") {
			t.Errorf("%s --experimental-compaction-batch-limit: %v\n%.300s", c.bin, err, out)
		}
	}
	// Every flag is known to the environment too: an ETCD_ variable for each raises no
	// "unrecognized environment variable" warning (values are bad on purpose, so the member
	// stops at the first one it reads, before it starts).
	code, out := runEtcd(t, []string{"ETCD_MAX_WALS=x"}, "--data-dir", filepath.Join(t.TempDir(), "d"))
	if code != 1 || !strings.Contains(out, "ETCD_MAX_WALS") {
		t.Fatalf("ETCD_MAX_WALS=x: exit %d, %s", code, out)
	}
}

// logLines decodes a zap JSON log.
func logLines(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		lines = append(lines, m)
	}
	return lines
}

// TestLoggingFlags: upstream's zap JSON (level, ts, caller, msg) on stderr by default, files
// with --log-outputs, the console form with --log-format console, and --log-level.
func TestLoggingFlags(t *testing.T) {
	m := NewMember(t)
	m.Start()
	m.Stop()
	lines := logLines(t, []byte(m.Log()))
	if len(lines) < 10 {
		t.Fatalf("only %d log lines", len(lines))
	}
	ts := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)
	for _, l := range lines {
		lvl, _ := l["level"].(string)
		if lvl != strings.ToLower(lvl) || lvl == "" || !ts.MatchString(fmt.Sprint(l["ts"])) || l["caller"] == nil || l["msg"] == nil {
			t.Fatalf("not upstream's zap form: %v", l)
		}
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "etcd.log")
	f := NewMember(t, "--log-outputs", file, "--log-level", "warn")
	f.Start()
	c := f.Client()
	if _, err := c.Put(Ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	f.Stop()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range logLines(t, b) {
		if l["level"] == "info" || l["level"] == "debug" {
			t.Fatalf("--log-level warn logged %v", l)
		}
	}
	if strings.Contains(f.Log(), `"msg"`) {
		t.Fatalf("--log-outputs %s still logged to stderr:\n%s", file, f.LogTail(5))
	}

	con := NewMember(t, "--log-format", "console")
	con.Start()
	con.Stop()
	if !regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\S+\tinfo\t\S+:\d+\tready to serve client requests`).MatchString(con.Log()) {
		t.Fatalf("--log-format console:\n%s", con.LogTail(10))
	}

	rot := filepath.Join(dir, "rotated.log")
	r := NewMember(t, "--log-outputs", rot, "--enable-log-rotation", "--log-rotation-config-json", `{"maxsize": 1, "maxbackups": 2}`)
	r.Start()
	r.Stop()
	if b, err := os.ReadFile(rot); err != nil || !strings.Contains(string(b), "ready to serve client requests") {
		t.Fatalf("rotated log file: %v\n%s", err, b)
	}
}

// TestWalDir: --wal-dir holds the WAL, the data dir none, and the member restarts from both.
func TestWalDir(t *testing.T) {
	walDir := filepath.Join(t.TempDir(), "wal")
	m := NewMember(t, "--wal-dir", walDir)
	m.Start()
	if _, err := m.Client().Put(Ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	m.Stop()
	if wals, _ := filepath.Glob(filepath.Join(walDir, "*.wal")); len(wals) == 0 {
		t.Fatalf("no WAL files in --wal-dir %s", walDir)
	}
	if wals, _ := filepath.Glob(filepath.Join(m.DataDir, "member", "wal", "*.wal")); len(wals) != 0 {
		t.Fatalf("WAL files in the data dir too: %v", wals)
	}
	m.Start()
	r, err := m.Client().Get(Ctx(t), "k")
	if err != nil || len(r.Kvs) != 1 {
		t.Fatalf("after restart with --wal-dir: %+v %v", r, err)
	}
}

// TestElectionFlags: the initial election tick advance and pre-vote, by upstream's and raft's log lines.
func TestElectionFlags(t *testing.T) {
	m := NewMember(t, "--pre-vote=false")
	m.Start()
	m.Stop()
	if !m.LogHas("started as single-node; fast-forwarding election ticks") {
		t.Fatal("a single member did not fast-forward its election ticks")
	}
	if m.LogHas("became pre-candidate") || !m.LogHas("became candidate") {
		t.Fatal("--pre-vote=false still ran a pre-vote")
	}
	d := NewMember(t)
	d.Start()
	d.Stop()
	if !d.LogHas("became pre-candidate") {
		t.Fatal("pre-vote is upstream's default, but no pre-vote ran")
	}

	c := NewCluster(t, 3, "--initial-election-tick-advance=false")
	c.Start()
	for _, m := range c.Members {
		if !m.LogHas("skipping initial election tick advance") {
			t.Fatalf("%s: --initial-election-tick-advance=false not honoured", m.Name)
		}
	}
}

func fetch(t *testing.T, method, url, host, origin string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestHTTPServingFlags: --enable-pprof, --host-whitelist, --cors, --metrics extensive and
// --enable-grpc-gateway on the client URL.
func TestHTTPServingFlags(t *testing.T) {
	m := NewMember(t, "--enable-pprof", "--host-whitelist", "etcd.example,127.0.0.1", "--cors", "http://ui.example", "--metrics", "extensive")
	m.Start()
	if _, err := m.Client().Put(Ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	if resp, body := fetch(t, "GET", m.ClientURL+"/debug/pprof/", "etcd.example", ""); resp.StatusCode != 200 || !strings.Contains(body, "goroutine") {
		t.Fatalf("--enable-pprof: %d %.200s", resp.StatusCode, body)
	}
	if resp, _ := fetch(t, "GET", m.ClientURL+"/version", "evil.example", ""); resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("a Host outside --host-whitelist: %d, want 421", resp.StatusCode)
	}
	resp, _ := fetch(t, "GET", m.ClientURL+"/version", "etcd.example", "http://ui.example")
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "http://ui.example" {
		t.Fatalf("--cors origin: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := fetch(t, "GET", m.ClientURL+"/version", "etcd.example", "http://other.example"); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("an origin outside --cors got CORS headers: %v", resp.Header)
	}
	if !strings.Contains(metricsText(t, m), `grpc_server_handling_seconds_bucket{grpc_method="Put"`) {
		t.Fatal("--metrics extensive exported no gRPC handling-time histogram")
	}

	d := NewMember(t, "--enable-grpc-gateway=false")
	d.Start()
	if resp, _ := fetch(t, "GET", d.ClientURL+"/debug/pprof/", "", ""); resp.StatusCode != 404 {
		t.Fatalf("pprof served without --enable-pprof: %d", resp.StatusCode)
	}
	if resp, _ := fetch(t, "POST", d.ClientURL+"/v3/kv/range", "", ""); resp.StatusCode != 404 {
		t.Fatalf("--enable-grpc-gateway=false still serves the gateway: %d", resp.StatusCode)
	}
	if strings.Contains(metricsText(t, d), "grpc_server_handling_seconds_bucket") {
		t.Fatal("basic metrics include the handling-time histogram")
	}
}

func metricsText(t *testing.T, m *Member) string {
	t.Helper()
	_, body := fetch(t, "GET", m.MetricsURL+"/metrics", "", "")
	return body
}

func metricValue(t *testing.T, m *Member, sample string) float64 {
	t.Helper()
	l := metricLine(t, m, sample)
	if l == "" {
		t.Fatalf("no %s sample", sample)
	}
	v, err := strconv.ParseFloat(strings.Fields(l)[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestGRPCServingFlags: --max-concurrent-streams limits each client connection.
func TestGRPCServingFlags(t *testing.T) {
	m := NewMember(t, "--max-concurrent-streams", "1")
	m.Start()
	c := m.Client()
	wctx, cancel := context.WithCancel(Ctx(t))
	defer cancel()
	wch := c.Watch(wctx, "w")
	// The watch stream takes the connection's one stream once it is open; a put from another
	// connection shows it is.
	other, err := m.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Put(Ctx(t), "w", "1"); err != nil {
		t.Fatal(err)
	}
	<-wch
	ctx, cancel2 := context.WithTimeout(Ctx(t), 2*time.Second)
	defer cancel2()
	if _, err := c.Get(ctx, "w"); err == nil {
		t.Fatal("a second concurrent stream was served with --max-concurrent-streams 1")
	}
	cancel()
}

// TestListenerFlags: --socket-reuse-port lets another socket bind the client port.
func TestListenerFlags(t *testing.T) {
	reuse := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) })
		return serr
	}}
	for _, flagOn := range []bool{true, false} {
		m := NewMember(t, fmt.Sprintf("--socket-reuse-port=%t", flagOn))
		m.Start()
		l, err := reuse.Listen(context.Background(), "tcp", strings.TrimPrefix(m.ClientURL, "http://"))
		if l != nil {
			l.Close()
		}
		if flagOn != (err == nil) {
			t.Fatalf("--socket-reuse-port=%t: second bind err = %v", flagOn, err)
		}
		m.Stop()
	}
}

// TestDiskFlags: --backend-batch-limit commits every N writes, --unsafe-no-fsync skips the
// WAL's fsync (so upstream's fsync histogram stays empty).
func TestDiskFlags(t *testing.T) {
	const puts = 50
	m := NewMember(t, "--backend-batch-limit", "1", "--backend-batch-interval", "1h", "--unsafe-no-fsync")
	m.Start()
	c := m.Client()
	before := metricValue(t, m, "etcd_disk_backend_commit_duration_seconds_count")
	for i := 0; i < puts; i++ {
		if _, err := c.Put(Ctx(t), fmt.Sprint(i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if got := metricValue(t, m, "etcd_disk_backend_commit_duration_seconds_count") - before; got < puts {
		t.Fatalf("--backend-batch-limit 1: %v commits for %d puts", got, puts)
	}
	if got := metricValue(t, m, "etcd_disk_wal_fsync_duration_seconds_count"); got != 0 {
		t.Fatalf("--unsafe-no-fsync: %v WAL fsyncs", got)
	}

	d := NewMember(t, "--backend-batch-interval", "1h", "--backend-batch-limit", "100000")
	d.Start()
	c = d.Client()
	before = metricValue(t, d, "etcd_disk_backend_commit_duration_seconds_count")
	for i := 0; i < puts; i++ {
		if _, err := c.Put(Ctx(t), fmt.Sprint(i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if got := metricValue(t, d, "etcd_disk_backend_commit_duration_seconds_count") - before; got >= puts/2 {
		t.Fatalf("a long batch interval and limit still committed %v times for %d puts", got, puts)
	}
	if got := metricValue(t, d, "etcd_disk_wal_fsync_duration_seconds_count"); got < puts {
		t.Fatalf("%v WAL fsyncs for %d puts", got, puts)
	}
}

// TestTLSVersionFlags: --tls-min-version refuses older clients; --cipher-suites limits TLS 1.2.
func TestTLSVersionFlags(t *testing.T) {
	certs := NewCerts(t)
	m := NewMember(t, "--cert-file", certs.ServerCert, "--key-file", certs.ServerKey, "--trusted-ca-file", certs.CA,
		"--tls-min-version", "TLS1.3")
	m.ClientURL = strings.Replace(m.ClientURL, "http://", "https://", 1)
	m.TLS = certs.ClientTLS(t, true)
	m.Start()
	addr := strings.TrimPrefix(m.ClientURL, "https://")
	for _, c := range []struct {
		max uint16
		ok  bool
	}{{tls.VersionTLS12, false}, {tls.VersionTLS13, true}} {
		cfg := certs.ClientTLS(t, false)
		cfg.MaxVersion = c.max
		conn, err := tls.Dial("tcp", addr, cfg)
		if conn != nil {
			conn.Close()
		}
		if (err == nil) != c.ok {
			t.Fatalf("client up to TLS %x against --tls-min-version TLS1.3: err = %v", c.max, err)
		}
	}
}

// TestWarningDurationFlags: requests slower than --warning-apply-duration and
// --warning-unary-request-duration are logged with upstream's messages.
func TestWarningDurationFlags(t *testing.T) {
	m := NewMember(t, "--warning-apply-duration", "1ns", "--warning-unary-request-duration", "1ns")
	m.Start()
	if _, err := m.Client().Put(Ctx(t), "slow", "v"); err != nil {
		t.Fatal(err)
	}
	m.Stop()
	if !m.LogHas(`"msg":"apply request took too long"`) || !m.LogHas(`"msg":"request stats"`) || !m.LogHas(`"response type":"/etcdserverpb.KV/Put"`) {
		t.Fatalf("no slow-request warnings:\n%s", m.LogTail(20))
	}
	d := NewMember(t)
	d.Start()
	if _, err := d.Client().Put(Ctx(t), "fast", "v"); err != nil {
		t.Fatal(err)
	}
	d.Stop()
	if d.LogHas(`"msg":"request stats"`) {
		t.Fatal("a fast request was logged at the default threshold")
	}
}

// TestListenClientHTTPURLs: with --listen-client-http-urls the HTTP API (gateway, /health)
// moves to its own listener and the client URLs serve gRPC only, as upstream.
func TestListenClientHTTPURLs(t *testing.T) {
	httpURL := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
	m := NewMember(t, "--listen-client-http-urls", httpURL)
	if err := m.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	// The client URL no longer answers HTTP: wait for /health on the HTTP URL.
	for i := 0; ; i++ {
		resp, err := http.Get(httpURL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if i == 200 {
			t.Fatalf("no /health on %s: %v\n%s", httpURL, err, m.LogTail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := m.Client().Put(Ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	// post returns the status, or 0 when the listener does not speak HTTP/1 at all (upstream's
	// gRPC-only listener answers with HTTP/2 frames; ours with 404).
	post := func(base string) int {
		resp, err := http.Post(base+"/v3/kv/range", "application/json", strings.NewReader(`{"key":"aw=="}`))
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(httpURL); code != http.StatusOK {
		t.Fatalf("gateway on --listen-client-http-urls: %d", code)
	}
	if code := post(m.ClientURL); code == http.StatusOK {
		t.Fatalf("gateway still on the client URL: %d", code)
	}
	if resp, body := fetch(t, "GET", httpURL+"/health", "", ""); resp.StatusCode != 200 || !strings.Contains(body, `"health":"true"`) {
		t.Fatalf("/health on the HTTP URL: %d %s", resp.StatusCode, body)
	}
}

// TestStopGRPCServiceOnDefrag: with the gate (or, at 3.6, its --experimental- flag) the gRPC
// health service reports NOT_SERVING while a defragmentation runs, as upstream logs it.
func TestStopGRPCServiceOnDefrag(t *testing.T) {
	for _, c := range []struct {
		gate  bool
		flag  string
		level string
	}{
		{true, "--feature-gates=StopGRPCServiceOnDefrag=true", CurrentLevel},
		{false, "--feature-gates=StopGRPCServiceOnDefrag=false", CurrentLevel},
		{true, "--experimental-stop-grpc-service-on-defrag=true", LastReleaseLevel},
	} {
		gate := c.gate
		m := NewMember(t, c.flag)
		m.Bin = ServerAt(t, c.level)
		m.Start()
		if _, err := m.Client().Defragment(Ctx(t), m.ClientURL); err != nil {
			t.Fatal(err)
		}
		m.Stop()
		stopped := m.LogHas(`"status":"NOT_SERVING","reason":"defrag is active"`)
		if stopped != gate {
			t.Fatalf("gate %t: NOT_SERVING during defrag logged = %t\n%s", gate, stopped, m.LogTail(10))
		}
	}
}

// TestLeaseCheckpointPersistGate: in a cluster at version 3.5, remaining lease TTLs are
// checkpointed but not persisted, so a restart gives a lease its whole TTL back; upstream's
// LeaseCheckpointPersist gate persists them, so the restarted member keeps counting down.
func TestLeaseCheckpointPersistGate(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	for _, gate := range []bool{false, true} {
		m := NewMember(t, "--lease-checkpoint-interval", "200ms", "--experimental-enable-lease-checkpoint", fmt.Sprintf("--experimental-enable-lease-checkpoint-persist=%t", gate))
		m.Bin = ServerAt(t, "3.5") // cluster version 3.5
		m.Start()
		c := m.Client()
		g, err := c.Grant(Ctx(t), 600)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second) // several checkpoints
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
		m.Start()
		ttl, err := m.Client().TimeToLive(Ctx(t), g.ID)
		if err != nil {
			t.Fatal(err)
		}
		// Without the gate the restart restores the full TTL (597-600 by the time it is read,
		// even on a busy machine); with it, what was left at the last checkpoint, about ten
		// seconds less.
		if (gate && ttl.TTL > 595) || (!gate && ttl.TTL < 597) {
			t.Fatalf("LeaseCheckpointPersist=%t: TTL after restart %d of 600", gate, ttl.TTL)
		}
	}
}

// TestCompactionBatchLimit: --compaction-batch-limit bounds how many revisions one batch of a
// compaction deletes (each batch is one sample of upstream's compaction pause histogram).
func TestCompactionBatchLimit(t *testing.T) {
	m := NewMember(t, "--compaction-batch-limit", "10", "--compaction-sleep-interval", "1ms")
	m.Start()
	c := m.Client()
	var rev int64
	for i := 0; i < 100; i++ {
		r, err := c.Put(Ctx(t), "k", fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		rev = r.Header.Revision
	}
	before := metricValue(t, m, "etcd_debugging_mvcc_db_compaction_pause_duration_milliseconds_count")
	if _, err := c.Compact(Ctx(t), rev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if batches := metricValue(t, m, "etcd_debugging_mvcc_db_compaction_pause_duration_milliseconds_count") - before; batches < 10 {
		t.Fatalf("99 revisions compacted in %v batches with --compaction-batch-limit 10", batches)
	}
	if keys := metricValue(t, m, "etcd_debugging_mvcc_db_compaction_keys_total"); keys < 99 {
		t.Fatalf("%v keys compacted, want 99", keys)
	}
}

// TestPeerClientCertFile: with --peer-client-cert-file a member presents that certificate when
// it dials its peers, not its server one (which --peer-crl-file revokes here).
func TestPeerClientCertFile(t *testing.T) {
	certs := NewCerts(t)
	c := NewCluster(t, 3, "--peer-client-cert-file", certs.ClientCert, "--peer-client-key-file", certs.ClientKey,
		"--peer-crl-file", certs.ServerCRL)
	c.UseTLS(certs)
	c.Start()
	if _, err := c.Client().Put(Ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
}

// TestRaftTimeouts: --raft-read-timeout below 5 s is raised with upstream's log line; idle
// streams are not cut (link heartbeats go out a third of the read timeout apart); and a frozen
// peer (SIGSTOP) neither stops the others from committing nor keeps it from catching up once it
// runs again. As upstream, the streams a member reads have no read deadline (upstream's
// transport dials past its own): a quiet stream stays open until TCP gives up or a write fails.
func TestRaftTimeouts(t *testing.T) {
	c := NewCluster(t, 3, "--raft-read-timeout", "1s", "--raft-write-timeout", "5s")
	c.Start()
	m1, m3 := c.Members[0], c.Members[2]
	if !m1.LogHas("raft-read-timeout increased to minimum value: 5s") {
		t.Fatalf("no raised read timeout logged:\n%s", m1.LogTail(20))
	}
	time.Sleep(7 * time.Second) // idle, longer than the read timeout
	if v := metricLine(t, m1, "etcd_network_disconnected_peers_total"); v != "" {
		t.Fatalf("idle streams were cut: %s", v)
	}
	if err := syscall.Kill(m3.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The frozen member may have been the leader: writes go through once the others elect one.
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < 20; {
		if _, err := m1.Client().Put(Ctx(t), fmt.Sprintf("frozen-%d", i), "v"); err != nil {
			if time.Now().After(deadline) {
				syscall.Kill(m3.Pid(), syscall.SIGCONT)
				t.Fatalf("a write with one member frozen: %v", err)
			}
			continue
		}
		i++
	}
	syscall.Kill(m3.Pid(), syscall.SIGCONT)
	if err := m3.WaitHealthy(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client().Put(Ctx(t), "after-thaw", "v"); err != nil {
		t.Fatal(err)
	}
	waitServes(t, m3.Client(), m3.Name, "frozen-19", "v")
}

// TestLogRotation: with --enable-log-rotation the log file is rotated at the configured size
// and old files are kept as --log-rotation-config-json says (lumberjack's keys, as upstream).
func TestLogRotation(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "etcd.log")
	m := NewMember(t, "--log-level", "debug", "--log-outputs", file, "--enable-log-rotation",
		"--log-rotation-config-json", `{"maxsize": 1, "maxbackups": 1}`)
	m.Start()
	c := m.Client()
	// Debug level logs every request with its key: 8 KiB keys make 8 KiB lines. Upstream's
	// sampling keeps the first 100 lines of a message per second, so stay under that rate.
	key := strings.Repeat("k", 8<<10)
	for i := 0; i < 320; i++ {
		if _, err := c.Put(Ctx(t), fmt.Sprintf("%s%d", key, i), "v"); err != nil {
			t.Fatal(err)
		}
		if i%80 == 79 {
			time.Sleep(time.Second)
		}
	}
	m.Stop()
	files, _ := filepath.Glob(filepath.Join(dir, "etcd*.log"))
	if len(files) != 2 {
		t.Fatalf("log files after 2.5 MB of debug lines with maxsize 1 MB and one backup: %v", files)
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.Size() > 1<<20 {
			t.Fatalf("%s: %v (size over the 1 MB rotation size?)", f, err)
		}
	}
}

// startingLine is the "starting an etcd server" event of bin started with args (a fresh data
// dir), as its keys in order and its values.
func startingLine(t *testing.T, bin string, args ...string) ([]string, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--data-dir", filepath.Join(t.TempDir(), "d"),
		"--listen-client-urls", fmt.Sprintf("http://127.0.0.1:%d", FreePort(t)), "--advertise-client-urls", "http://127.0.0.1:2379",
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), `"msg":"starting an etcd server"`) {
			continue
		}
		var vals map[string]any
		if err := json.Unmarshal(sc.Bytes(), &vals); err != nil {
			t.Fatal(err)
		}
		var keys []string
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.Token() // {
		for dec.More() {
			k, _ := dec.Token()
			keys = append(keys, k.(string))
			var skip json.RawMessage
			dec.Decode(&skip)
		}
		return keys, vals
	}
	t.Fatalf("%s logged no \"starting an etcd server\"", bin)
	return nil, nil
}

// TestStartingLineAsUpstream: the "starting an etcd server" event carries upstream's fields in
// upstream's order at each level (ours adds "implementation" at the end), and the same values
// for the settings both were given or default (3.5's --snapshot-count is 100000, not 3.6's
// 10000; 3.6 and 3.7 enforce v2-deprecation write-only whatever the flag says).
func TestStartingLineAsUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	args := []string{"--name", "e1", "--v2-deprecation", "gone", "--auto-compaction-retention", "2", "--quota-backend-bytes", "0"}
	for _, c := range []struct{ level, upstream string }{{OldestLevel, Upstream35Version}, {LastReleaseLevel, Upstream36Version}, {CurrentLevel, Upstream37Version}} {
		t.Run(c.level, func(t *testing.T) {
			levelArgs := args
			if c.level == OldestLevel {
				levelArgs = args[:2] // 3.5 has no --v2-deprecation; its retention is in hours too
			}
			upKeys, up := startingLine(t, UpstreamBinaryAt(t, c.upstream, "etcd"), levelArgs...)
			ourKeys, ours := startingLine(t, ServerAt(t, c.level), levelArgs...)
			if len(ourKeys) == 0 || ourKeys[len(ourKeys)-1] != "implementation" {
				t.Fatalf("ours: no implementation field last: %v", ourKeys)
			}
			if strings.Join(ourKeys[:len(ourKeys)-1], " ") != strings.Join(upKeys, " ") {
				t.Fatalf("fields differ:\n upstream %v\n ours     %v", upKeys, ourKeys)
			}
			for _, k := range upKeys {
				switch k {
				case "ts", "caller", "git-sha", "data-dir", "member-dir", "listen-client-urls", "listen-peer-urls", "go-version":
					continue // the run's own, or the build's
				}
				if fmt.Sprint(up[k]) != fmt.Sprint(ours[k]) {
					t.Errorf("%s: upstream %v, ours %v", k, up[k], ours[k])
				}
			}
		})
	}
}
