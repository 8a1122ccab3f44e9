package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/upgradelab/cluster"
)

// memberIDs maps member names to hex IDs as the cluster reports them.
func memberIDs(t *testing.T, cli *clientv3.Client) map[string]string {
	t.Helper()
	resp, err := cli.MemberList(Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, m := range resp.Members {
		ids[m.Name] = fmt.Sprintf("%x", m.ID)
	}
	return ids
}

// registeredIDs maps member names to the IDs in their registration keys.
func registeredIDs(st TokenState) map[string]string {
	ids := map[string]string{}
	for _, r := range st.Registered {
		ids[r.Name] = r.ID
	}
	return ids
}

func sameMap(a, b map[string]string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func TestDiscoveryBootstrapsCluster(t *testing.T) {
	svc := NewDiscoveryService(t)
	svc.Start()
	token := svc.NewToken(3)
	ms := DiscoveryMembers(t, 3, svc.ClientURL, token)
	// m3 takes its settings from upstream's config-file form: a discovery-config section.
	m3 := ms[2]
	cfg := fmt.Sprintf(`name: m3
data-dir: %s
listen-client-urls: %s
advertise-client-urls: %s
listen-peer-urls: %s
initial-advertise-peer-urls: %s
listen-metrics-urls: %s
discovery-config:
  client:
    endpoints: [%q]
    request-timeout: 3000000000
  token: %s
`, m3.DataDir, m3.ClientURL, m3.ClientURL, m3.PeerURL, m3.PeerURL, m3.MetricsURL, svc.ClientURL, token)
	path := filepath.Join(t.TempDir(), "m3.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	m3.Discovery = []string{"--config-file", path}
	(&Cluster{t: t, Members: ms}).Start()

	c := &Cluster{t: t, Members: ms}
	cli := c.Client()
	st := svc.Token(token)
	if !st.Complete || len(st.Registered) != 3 || len(st.Extra) != 0 {
		t.Fatalf("token state after bootstrap: %+v", st)
	}
	got := memberIDs(t, cli)
	if !sameMap(got, registeredIDs(st)) || len(got) != 3 {
		t.Fatalf("member IDs %v, registered %v", got, registeredIDs(st))
	}
	for _, m := range ms {
		if !strings.Contains(st.InitialCluster, m.Name+"="+m.PeerURL) {
			t.Errorf("initial cluster %q lacks %s", st.InitialCluster, m.Name)
		}
	}
	if _, err := ms[0].Client().Put(Ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	if resp, err := ms[2].Client().Get(Ctx(t), "k"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("read through m3: %v %v", resp, err)
	}

	// A fourth member with the same token is refused: the cluster is full.
	late := DiscoveryMembers(t, 4, svc.ClientURL, token)[3]
	if err := late.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	if code, err := late.Wait(30 * time.Second); code != 1 || err != nil {
		t.Fatalf("late member: exit %d, %v\n%s", code, err, late.LogTail(20))
	}
	for _, want := range []string{"failed to join discovery cluster (discovery: cluster is full)", "do not reuse a discovery token"} {
		if !late.LogHas(want) {
			t.Errorf("late member's log lacks %q:\n%s", want, late.LogTail(20))
		}
	}

	// Once bootstrapped, a member restarts from its data without the discovery service.
	svc.Stop()
	if err := ms[0].Stop(); err != nil {
		t.Fatal(err)
	}
	ms[0].Start()
	if !ms[0].LogHas("discovery token is ignored since cluster already initialized") {
		t.Errorf("restarted member did not say it ignored the discovery token:\n%s", ms[0].LogTail(20))
	}
	if resp, err := ms[0].Client().Get(Ctx(t), "k"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("read after restart: %v %v", resp, err)
	}
}

func TestDiscoveryOversubscribedToken(t *testing.T) {
	svc := NewDiscoveryService(t)
	svc.Start()
	token := svc.NewToken(3)
	ms := DiscoveryMembers(t, 5, svc.ClientURL, token)
	for _, m := range ms {
		if err := m.StartNoWait(); err != nil {
			t.Fatal(err)
		}
	}
	var started, refused []string
	for _, m := range ms {
		if err := m.WaitHealthy(30 * time.Second); err == nil {
			started = append(started, m.Name)
			continue
		}
		code, err := m.Wait(10 * time.Second)
		if code != 1 || err != nil || !m.LogHas("discovery: cluster is full") {
			t.Fatalf("%s neither started nor was refused as full: exit %d %v\n%s", m.Name, code, err, m.LogTail(20))
		}
		refused = append(refused, m.Name)
	}
	if len(started) != 3 || len(refused) != 2 {
		t.Fatalf("started %v, refused %v; want 3 and 2", started, refused)
	}
	st := svc.Token(token)
	var registered []string
	for _, r := range st.Registered {
		registered = append(registered, r.Name)
	}
	sort.Strings(registered)
	if fmt.Sprint(registered) != fmt.Sprint(started) {
		t.Fatalf("the first three registrations %v are not the members that started %v", registered, started)
	}
	var healthy []*Member
	for _, m := range ms {
		for _, n := range started {
			if m.Name == n {
				healthy = append(healthy, m)
			}
		}
	}
	if ids := memberIDs(t, (&Cluster{t: t, Members: healthy}).Client()); !sameMap(ids, registeredIDs(st)) {
		t.Fatalf("member list %v, registrations %v", ids, registeredIDs(st))
	}
}

func TestDiscoveryWaitsForTheService(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	svc := NewDiscoveryService(t)
	svc.Start()
	token := svc.NewToken(3)
	svc.Stop()
	ms := DiscoveryMembers(t, 3, svc.ClientURL, token)
	for _, m := range ms {
		if err := m.StartNoWait(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for !ms[0].LogHas("retry connecting to discovery service") {
		if time.Now().After(deadline) {
			t.Fatalf("m1 does not report retrying:\n%s", ms[0].LogTail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, m := range ms {
		select {
		case <-m.Exited():
			t.Fatalf("%s exited while the discovery service was down:\n%s", m.Name, m.LogTail(20))
		default:
		}
	}
	svc.Start() // same data and ports: the token is still there
	for _, m := range ms {
		if err := m.WaitHealthy(60 * time.Second); err != nil {
			t.Fatalf("%s: %v\n%s", m.Name, err, m.LogTail(30))
		}
	}
	if st := svc.Token(token); !st.Complete {
		t.Fatalf("token not complete: %+v", st)
	}
}

func TestDiscoveryRefusals(t *testing.T) {
	dir := t.TempDir()
	svc := NewDiscoveryService(t)
	svc.Start()
	ep := svc.ClientURL
	usage := []struct {
		args []string
		code int // upstream's status: 1 after verification, 2 from the flag parser
		want string
	}{
		{[]string{"--discovery-token", "t1"}, 1, "both --discovery-token and --discovery-endpoints must be set"},
		{[]string{"--discovery-endpoints", ep}, 1, "both --discovery-token and --discovery-endpoints must be set"},
		{[]string{"--discovery-endpoints", ep, "--discovery-token", "t1", "--initial-cluster", "default=http://localhost:2380"}, 1, "multiple discovery or bootstrap flags are set"},
		// Upstream starts with these two and fails later; ours refuses at once.
		{[]string{"--discovery-endpoints", ep, "--discovery-token", "a/b"}, 1, "--discovery-token"},
		// v2 discovery: gone at 3.7 as upstream 3.7 (the flag is not defined); 3.6 below.
		{[]string{"--discovery", "http://127.0.0.1:1/x"}, 2, "flag provided but not defined: -discovery"},
		{[]string{"--discovery-srv", "example.internal"}, 1, "--discovery-srv is not supported"},
		{[]string{"--discovery-fallback", "proxy"}, 1, "--discovery-fallback can't be configured as"},
		{[]string{"--discovery-request-timeout", "soon"}, 2, "-discovery-request-timeout"},
	}
	for _, c := range usage {
		code, out := runEtcd(t, nil, append([]string{"--data-dir", filepath.Join(dir, "d")}, c.args...)...)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("etcd %v: exit %d, want %d with %q:\n%s", c.args, code, c.code, c.want, out)
		}
	}
	// v2 discovery at 3.6 (upstream's words): with --initial-cluster, or with v3 discovery settings.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--discovery", "http://127.0.0.1:1/x", "--initial-cluster", "default=http://localhost:2380"}, "multiple discovery or bootstrap flags are set"},
		{[]string{"--discovery-proxy", "http://127.0.0.1:1", "--discovery-token", "t1", "--discovery-endpoints", ep}, "both v2 discovery settings (discovery, discovery-proxy) and v3 discovery settings"},
	} {
		code, out := runEtcdBin(t, ServerAt(t, LastReleaseLevel), nil, append([]string{"--data-dir", filepath.Join(dir, "d")}, c.args...)...)
		if code != 1 || !strings.Contains(out, c.want) {
			t.Errorf("etcd at 3.6 %v: exit %d, want 1 with %q:\n%s", c.args, code, c.want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "d")); err == nil {
		t.Errorf("a refused start created the data dir")
	}

	// A token that was never created, and one whose size is not a number.
	cli := (&Member{t: t, Member: &cluster.Member{ClientURL: ep}}).Client()
	if _, err := cli.Put(Ctx(t), "/_etcd/registry/badsize/_config/size", "three"); err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]string{
		"missing": "failed to join discovery cluster (discovery: size key not found)",
		"badsize": "failed to join discovery cluster (discovery: size key is bad",
	} {
		m := DiscoveryMembers(t, 1, ep, token)[0]
		if err := m.StartNoWait(); err != nil {
			t.Fatal(err)
		}
		if code, err := m.Wait(30 * time.Second); code != 1 || err != nil || !m.LogHas(want) {
			t.Errorf("token %s: exit %d %v, want 1 with %q:\n%s", token, code, err, want, m.LogTail(10))
		}
	}
}

// TestDiscoveryInterchangeWithUpstream: our members bootstrap through upstream etcd serving
// discovery, upstream members through our discovery service, and both compute the same member
// IDs from the same names, URLs and token.
func TestDiscoveryInterchangeWithUpstream(t *testing.T) {
	upEtcd := UpstreamBinary(t, "etcd")

	// Upstream etcd keeps the tokens; our CLI creates one there.
	backing := NewMember(t)
	backing.Bin = upEtcd
	backing.Start()
	code, out := runTool(t, "discovery", "new", "--endpoints", backing.ClientURL, "--size", "3")
	if code != 0 {
		t.Fatalf("discovery new: %d %s", code, out)
	}
	token := strings.TrimSpace(out)
	ours := DiscoveryMembers(t, 3, backing.ClientURL, token)
	(&Cluster{t: t, Members: ours}).Start()
	code, out = runTool(t, "discovery", "status", "--endpoints", backing.ClientURL, "--token", token)
	if code != 0 || !strings.Contains(out, "3 of 3 members registered (complete)") {
		t.Fatalf("discovery status: %d %s", code, out)
	}
	for _, m := range ours {
		if !strings.Contains(out, m.Name) || !strings.Contains(out, m.PeerURL) {
			t.Errorf("status lacks %s:\n%s", m.Name, out)
		}
	}

	// Upstream members bootstrap through our discovery service.
	svc := NewDiscoveryService(t)
	svc.Start()
	token2 := svc.NewToken(3)
	ups := DiscoveryMembers(t, 3, svc.ClientURL, token2)
	for _, m := range ups {
		m.Bin = upEtcd
	}
	(&Cluster{t: t, Members: ups}).Start()
	upIDs := memberIDs(t, (&Cluster{t: t, Members: ups}).Client())
	if st := svc.Token(token2); !st.Complete || !sameMap(upIDs, registeredIDs(st)) {
		t.Fatalf("upstream member IDs %v, registrations %+v", upIDs, st)
	}

	// Ours, on the same names and URLs with the same token, get upstream's IDs.
	for _, m := range ups {
		m.Kill()
	}
	if code, body := svc.Do("DELETE", "/tokens/"+token2); code != http.StatusOK {
		t.Fatalf("DELETE token: %d %s", code, body)
	}
	if code, body := svc.Do("POST", "/new?size=3&token="+token2); code != http.StatusCreated {
		t.Fatalf("re-create token: %d %s", code, body)
	}
	for _, m := range ups {
		m.Bin = Binary(t, "etcd")
		m.DataDir = filepath.Join(t.TempDir(), "data")
	}
	(&Cluster{t: t, Members: ups}).Start()
	if ourIDs := memberIDs(t, (&Cluster{t: t, Members: ups}).Client()); !sameMap(ourIDs, upIDs) {
		t.Fatalf("our member IDs %v, upstream's %v", ourIDs, upIDs)
	}
}

func TestDiscoveryCommandsAndAPI(t *testing.T) {
	svc := NewDiscoveryService(t)
	svc.Start()
	ep := svc.ClientURL
	steps := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"new", "--endpoints", ep, "--size", "2", "--token", "abc"}, 0, "abc\n"},
		{[]string{"new", "--endpoints", ep, "--token", "abc"}, 1, "discovery: token already exists: abc"},
		{[]string{"status", "--endpoints", ep, "--token", "abc"}, 0, "token abc: 0 of 2 members registered"},
		{[]string{"status", "--endpoints", ep, "--token", "abc", "-w", "json"}, 0, `"size": 2`},
		{[]string{"status", "--endpoints", ep, "--token", "nope"}, 1, "discovery: size key not found"},
		{[]string{"status", "--endpoints", ep}, 2, "--token: discovery token is empty"},
		{[]string{"status", "--endpoints", ep, "--token", "abc", "-w", "yaml"}, 2, "--write-out"},
		{[]string{"new", "--endpoints", ep, "--size", "0"}, 2, "--size must be at least 1"},
		{[]string{"new", "--endpoints", ep, "--sise", "3"}, 2, "unknown flag: --sise"},
		{[]string{"serve", "--listen-api-url", "ftp://127.0.0.1:1"}, 2, "--listen-api-url"},
		{[]string{"frobnicate"}, 2, "unknown command \"frobnicate\""},
		{[]string{"delete", "--endpoints", ep, "--token", "abc"}, 0, "deleted token abc (1 keys)"},
		{[]string{"delete", "--endpoints", ep, "--token", "abc"}, 1, "no such discovery token: abc"},
		{[]string{"version"}, 0, "discovery Version: "},
	}
	for _, s := range steps {
		code, out := runTool(t, "discovery", s.args...)
		if code != s.code || !strings.Contains(out, s.want) {
			t.Errorf("discovery %v: exit %d, want %d with %q:\n%s", s.args, code, s.code, s.want, out)
		}
	}

	api := []struct {
		method, path string
		code         int
		want         string
	}{
		{"GET", "/health", 200, `"health": "true"`},
		{"POST", "/new", 201, `"size": 3`},
		{"POST", "/new?size=5&token=fixed", 201, `"token": "fixed"`},
		{"POST", "/new?size=5&token=fixed", 409, "token already exists"},
		{"POST", "/new?size=0", 400, "size must be a number from 1 to 15"},
		{"POST", "/new?size=99", 400, "size must be a number from 1 to 15"},
		{"POST", "/new?token=a%2Fb", 400, "must not contain '/'"},
		{"GET", "/tokens/fixed", 200, `"registered": []`},
		{"GET", "/tokens/unknown", 404, "no such discovery token: unknown"},
		{"DELETE", "/tokens/fixed", 200, `"deleted": 1`},
		{"DELETE", "/tokens/fixed", 404, "no such discovery token: fixed"},
		{"GET", "/new", 405, ""},
	}
	for _, a := range api {
		code, body := svc.Do(a.method, a.path)
		if code != a.code || !strings.Contains(body, a.want) {
			t.Errorf("%s %s: %d, want %d with %q:\n%s", a.method, a.path, code, a.code, a.want, body)
		}
	}
	_, body := svc.Do("POST", "/new?size=1")
	var created TokenState
	if err := json.Unmarshal([]byte(body), &created); err != nil || created.Token == "" {
		t.Fatalf("POST /new answer: %v %s", err, body)
	}
	if !strings.Contains(body, ep) {
		t.Errorf("POST /new does not name the discovery endpoints %s:\n%s", ep, body)
	}
	// A one-member cluster bootstraps through it.
	m := DiscoveryMembers(t, 1, ep, created.Token)[0]
	m.Start()
	if st := svc.Token(created.Token); !st.Complete || st.InitialCluster != "m1="+m.PeerURL {
		t.Fatalf("token after one-member bootstrap: %+v", st)
	}
}

// Discovery through a cluster with authentication: the token is made by root, and members
// register with a user allowed only the registry's keys, given either as --discovery-user
// name:password or with --discovery-password.
func TestDiscoveryWithAuth(t *testing.T) {
	backing := NewMember(t)
	backing.Start()
	admin := userClient(t, []string{backing.ClientURL}, "", "", nil)
	setupAuth(t, admin)
	root := userClient(t, []string{backing.ClientURL}, "root", "rootpw", nil)
	for _, step := range []func() error{
		func() error { _, err := root.UserAdd(Ctx(t), "disc", "discpw"); return err },
		func() error { _, err := root.RoleAdd(Ctx(t), "registry"); return err },
		func() error {
			_, err := root.RoleGrantPermission(Ctx(t), "registry", "/_etcd/registry/", clientv3.GetPrefixRangeEnd("/_etcd/registry/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := root.UserGrantRole(Ctx(t), "disc", "registry"); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if code, out := runTool(t, "discovery", "new", "--endpoints", backing.ClientURL, "--size", "3"); code == 0 {
		t.Fatalf("discovery new without a user on an auth cluster succeeded: %s", out)
	}
	code, out := runTool(t, "discovery", "new", "--endpoints", backing.ClientURL, "--size", "3", "--user", "root:rootpw")
	if code != 0 {
		t.Fatalf("discovery new: %d %s", code, out)
	}
	token := strings.TrimSpace(out)
	ms := DiscoveryMembers(t, 3, backing.ClientURL, token)
	ms[0].Discovery = append(ms[0].Discovery, "--discovery-user", "disc:discpw")
	ms[1].Discovery = append(ms[1].Discovery, "--discovery-user", "disc", "--discovery-password", "discpw")
	ms[2].Discovery = append(ms[2].Discovery, "--discovery-user", "disc:discpw")
	(&Cluster{t: t, Members: ms}).Start()
	if got := memberIDs(t, (&Cluster{t: t, Members: ms}).Client()); len(got) != 3 {
		t.Fatalf("members after discovery: %v", got)
	}
	code, out = runTool(t, "discovery", "status", "--endpoints", backing.ClientURL, "--token", token, "--user", "disc", "--password", "discpw")
	if code != 0 || !strings.Contains(out, "3 of 3 members registered (complete)") {
		t.Fatalf("discovery status: %d %s", code, out)
	}
}

// TestV2DiscoveryAsUpstream36: v2 discovery (--discovery=<url>) as upstream 3.6 runs it, served
// by ours at 3.5 with --enable-v2: two members of ours at 3.6 and one upstream 3.6.16 member
// register in the same directory, find each other and form one cluster with the IDs each
// registered; a fourth member finds the cluster full.
func TestV2DiscoveryAsUpstream36(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	svc := NewMember(t, "--enable-v2")
	svc.Bin = ServerAt(t, OldestLevel)
	svc.Start()
	durl := svc.ClientURL + "/v2/keys/token1"
	if code, _, body := v2Do(t, http.MethodPut, durl+"/_config/size", url.Values{"value": {"3"}}); code != http.StatusCreated {
		t.Fatalf("size key: %d %s", code, body)
	}
	var ms []*Member
	for i, bin := range []string{ServerAt(t, LastReleaseLevel), UpstreamBinaryAt(t, Upstream36Version, "etcd"), ServerAt(t, LastReleaseLevel)} {
		m := NewMember(t)
		m.Name, m.Bin, m.InitialCluster = fmt.Sprintf("d%d", i), bin, ""
		m.Discovery = []string{"--discovery", durl}
		ms = append(ms, m)
	}
	c := &Cluster{t: t, Members: ms}
	c.Start()
	ids := memberIDs(t, c.Client())
	if len(ids) != 3 {
		t.Fatalf("members %v, want the three that registered", ids)
	}
	code, _, body := v2Do(t, http.MethodGet, durl+"?sorted=true", nil)
	for name, id := range ids {
		if code != http.StatusOK || !strings.Contains(body, fmt.Sprintf(`"key":"/token1/%s","value":"%s=`, id, name)) {
			t.Errorf("%s (%s) is not registered as it runs: %d %s", name, id, code, body)
		}
	}
	late := NewMember(t)
	late.Name, late.Bin, late.InitialCluster = "late", ServerAt(t, LastReleaseLevel), ""
	late.Discovery = []string{"--discovery", durl}
	if err := late.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	if code, err := late.Wait(30 * time.Second); code == 0 || err != nil || !late.LogHas("discovery: cluster is full") {
		t.Errorf("a fourth member: exit %d %v, want a refusal naming the full cluster\n%s", code, err, late.LogTail(8))
	}
}
