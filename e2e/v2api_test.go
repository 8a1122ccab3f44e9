package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// v2Session drives the v2 API of a 3.5 member started with --enable-v2, through HTTP and
// through etcdctl's v2 mode (ctlBin), and returns every answer with what differs between two
// members by nature (ports, member and cluster IDs, times) masked.
func v2Session(t *testing.T, m *Member, ctlBin string) []string {
	base := m.ClientURL
	var out []string
	// Once a node with a TTL exists, the leader proposes a SYNC every 500 ms (both
	// implementations), so the raft index depends on timing from then on: such nodes come last.
	ttlNodes := false
	mask := func(s string) string {
		if ttlNodes {
			s = regexp.MustCompile(`raft=[0-9]+`).ReplaceAllString(s, "raft=R")
		}
		s = strings.ReplaceAll(s, m.ClientURL, "CLIENT")
		s = strings.ReplaceAll(s, m.PeerURL, "PEER")
		s = regexp.MustCompile(`[0-9a-f]{14,16}`).ReplaceAllString(s, "ID")
		s = regexp.MustCompile(`"expiration":"[^"]*"`).ReplaceAllString(s, `"expiration":"T"`)
		return s
	}
	do := func(method, path, ctype, body string, user ...string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if len(user) == 2 {
			req.SetBasicAuth(user[0], user[1])
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h := resp.Header
		out = append(out, mask(fmt.Sprintf("%s %s -> %d index=%s raft=%s term=%s cluster=%q allow=%q %s", method, path, resp.StatusCode,
			h.Get("X-Etcd-Index"), h.Get("X-Raft-Index"), h.Get("X-Raft-Term"), h.Get("X-Etcd-Cluster-Id"), h.Get("Allow"), b)))
	}
	form := "application/x-www-form-urlencoded"
	put := func(path string, v url.Values) { do(http.MethodPut, path, form, v.Encode()) }
	get := func(path string) { do(http.MethodGet, path, "", "") }

	put("/v2/keys/foo", url.Values{"value": {"bar"}})
	get("/v2/keys/foo")
	get("/v2/keys/foo?quorum=true")
	put("/v2/keys/foo", url.Values{"value": {"x"}, "prevExist": {"false"}})
	put("/v2/keys/foo", url.Values{"value": {"baz"}, "prevValue": {"bar"}})
	put("/v2/keys/foo", url.Values{"value": {"no"}, "prevIndex": {"1"}})
	put("/v2/keys/foo", url.Values{"value": {"upd"}, "prevExist": {"true"}})
	do(http.MethodPost, "/v2/keys/queue", form, url.Values{"value": {"job1"}}.Encode())
	do(http.MethodPost, "/v2/keys/queue", form, url.Values{"value": {"job2"}}.Encode())
	put("/v2/keys/dir/a", url.Values{"value": {"1"}})
	put("/v2/keys/dir/b", url.Values{"value": {"2"}})
	put("/v2/keys/emptydir", url.Values{"dir": {"true"}})
	get("/v2/keys/?recursive=true&sorted=true")
	get("/v2/keys/dir?wait=true&waitIndex=1&recursive=true")
	do(http.MethodDelete, "/v2/keys/dir", "", "")
	do(http.MethodDelete, "/v2/keys/dir?recursive=true", "", "")
	do(http.MethodDelete, "/v2/keys/foo?prevValue=nope", "", "")
	do(http.MethodDelete, "/v2/keys/foo?prevValue=upd", "", "")
	put("/v2/keys/foo?noValueOnSuccess=true", url.Values{"value": {"quiet"}})
	put("/v2/keys/bad", url.Values{"value": {"v"}, "ttl": {"abc"}})
	put("/v2/keys/bad?prevValue=", url.Values{"value": {"v"}})
	put("/v2/keys/bad?wait=true", url.Values{"value": {"v"}})
	put("/v2/keys/bad", url.Values{"refresh": {"true"}, "ttl": {"5"}})
	do(http.MethodPatch, "/v2/keys/bad", "", "")
	get("/v2/members")
	get("/v2/members/leader")
	do(http.MethodPost, "/v2/members", form, `{"peerURLs":["http://127.0.0.1:1"]}`)
	do(http.MethodPost, "/v2/members", "application/json", `{"peerURLs":["ftp://127.0.0.1:1"]}`)
	get("/v2/machines")
	do(http.MethodPost, "/v2/stats/self", "", "")
	// the stats' figures differ run to run: their fields and the types of their values are compared
	for _, p := range []string{"/v2/stats/self", "/v2/stats/leader", "/v2/stats/store"} {
		out = append(out, p+" -> "+jsonFields(t, base+p))
	}
	get("/v2/auth/enable")
	// upstream's TestV2CurlIssue5182, then a guest without rights and a user's wrong password
	do(http.MethodPut, "/v2/auth/users/foo", "application/json", `{"user":"foo", "password":"pass"}`)
	do(http.MethodPut, "/v2/auth/roles/foo", "application/json", `{"role":"foo", "permissions": {"kv": {"read": ["/foo/*"]}}}`)
	do(http.MethodPut, "/v2/auth/users/foo", "application/json", `{"user": "foo", "grant": ["foo"]}`)
	do(http.MethodPut, "/v2/auth/users/foo", "application/json", `{"user": "foo", "grant": ["foo"]}`)
	do(http.MethodPut, "/v2/auth/roles/root", "application/json", `{"role":"root"}`)
	do(http.MethodPut, "/v2/auth/enable", "", "")
	get("/v2/auth/roles")

	ctl := func(args ...string) {
		t.Helper()
		cmd := exec.Command(ctlBin, append([]string{"--endpoints", base}, args...)...)
		cmd.Env = append(cmd.Environ(), "ETCDCTL_API=2")
		b, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		out = append(out, mask(fmt.Sprintf("etcdctl %s -> exit %d: %s", strings.Join(args, " "), code, b)))

	}
	ctl("set", "k1", "v1")
	ctl("get", "k1")
	ctl("get", "--quorum", "k1")
	ctl("mk", "k1", "again")
	ctl("mk", "k2", "v2")
	ctl("ls", "--sort", "-r", "-p")
	ctl("-o", "extended", "get", "k1")
	ctl("-o", "json", "rm", "nothere")
	ctl("rm", "k2")
	ctl("rm", "k2")
	ctl("mkdir", "d1")
	ctl("get", "d1")
	ctl("update", "nothere", "v")
	ctl("role", "add", "r1")
	ctl("role", "add", "r1")
	ctl("role", "grant", "--rw", "--path=/k*", "r1")
	ctl("role", "grant", "--path=/k1", "r1")
	ctl("role", "get", "r1")
	ctl("role", "list")
	ctl("user", "add", "u1:pw")
	ctl("user", "grant", "--roles", "r1", "u1")
	ctl("user", "grant", "--roles", "r1", "u1")
	ctl("user", "get", "u1")
	ctl("user", "list")
	ctl("member", "list")
	ctl("cluster-health")
	ctl("user", "add", "root:rootpw")
	ctl("auth", "enable")
	ctl("auth", "enable")
	ctl("-u", "root:rootpw", "auth", "enable")
	// Auth on: the guest role (read and write everything) serves requests without credentials.
	do(http.MethodGet, "/v2/keys/foo/", "", "", "root", "rootpw")
	do(http.MethodGet, "/v2/keys/foo", "", "", "foo", "")
	ctl("-u", "u1:pw", "get", "k1")
	ctl("-u", "u1:wrong", "get", "k1")
	ctl("-u", "root:rootpw", "role", "revoke", "--rw", "--path=/*", "guest")
	ctl("get", "k1")
	ctl("-u", "u1:pw", "set", "k1", "by-u1")
	ctl("-u", "u1:pw", "set", "other", "by-u1")
	ctl("-u", "root:rootpw", "user", "remove", "root")
	ctl("-u", "root:rootpw", "auth", "disable")
	ctl("watch", "--after-index=1", "k1")
	// Last: upstream proposes the removal of an unknown member before refusing it (a raft entry
	// more, so a higher X-Raft-Index after it); ours refuses it first. The answers are the same.
	do(http.MethodDelete, "/v2/members/1234", "", "")
	ttlNodes = true
	put("/v2/keys/t/a", url.Values{"value": {"1"}, "ttl": {"100"}})
	put("/v2/keys/t/a", url.Values{"refresh": {"true"}, "ttl": {"200"}})
	put("/v2/keys/t/a", url.Values{"refresh": {"true"}, "ttl": {"300"}, "prevExist": {"false"}})
	get("/v2/keys/?recursive=true&sorted=true")
	get("/v2/keys/t/a")
	return out
}

// TestV2APIAsUpstream35: the v2 API of ours at 3.5 (--enable-v2) and etcdctl's v2 mode
// (ETCDCTL_API=2) answer as upstream 3.5.35's: the keys API (set, create, compare-and-swap and
// -delete, in-order keys, TTLs, directories, recursive and sorted reads, waits on the history,
// parameter errors), members, machines, v2 auth (users, roles, grants, guest access, basic auth,
// enable and disable) and each etcdctl v2 command's output and exit status, with the same store
// and raft indexes.
// jsonFields GETs url and describes its JSON body by its fields and their value types, in order
// ("{a:string b:{c:number}}"); a member's state (field "state") is kept as is.
func jsonFields(t *testing.T, url string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return fmt.Sprintf("%d (not JSON: %v)", resp.StatusCode, err)
	}
	var describe func(k string, v any) string
	describe = func(k string, v any) string {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, k+":"+describe(k, x[k]))
			}
			return "{" + strings.Join(parts, " ") + "}"
		case []any:
			if len(x) == 0 {
				return "[]"
			}
			return "[" + describe(k, x[0]) + "...]"
		case string:
			if k == "state" {
				return x
			}
			return "string"
		case float64:
			return "number"
		case bool:
			return "bool"
		case nil:
			return "null"
		}
		return fmt.Sprintf("%T", v)
	}
	return fmt.Sprintf("%d %s", resp.StatusCode, describe("", v))
}

func TestV2APIAsUpstream35(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	run := func(bin, ctlBin string) []string {
		m := NewMember(t, "--enable-v2")
		m.Bin = bin
		m.Start()
		defer m.Stop()
		return v2Session(t, m, ctlBin)
	}
	up := run(UpstreamBinaryAt(t, Upstream35Version, "etcd"), UpstreamBinaryAt(t, Upstream35Version, "etcdctl"))
	ours := run(ServerAt(t, OldestLevel), ToolAt(t, OldestLevel, "etcdctl"))
	for i := range max(len(up), len(ours)) {
		var u, o string
		if i < len(up) {
			u = up[i]
		}
		if i < len(ours) {
			o = ours[i]
		}
		if u != o {
			t.Errorf("answer %d:\n ours     %s\n upstream %s", i, o, u)
		}
	}
}

// TestV2DeprecationAsUpstream: a 3.5 data dir holding v2 keys (written through the v2 API of
// ours at 3.5) is refused where upstream refuses it, with upstream's words: by a 3.5 member at
// --v2-deprecation=write-only and by 3.6 when a snapshot holds the keys (custom content in
// v2store), by 3.6 when only the WAL does (a disallowed v2 WAL); upstream 3.5.35 and 3.6.16 on
// copies of the same data dirs say the same. At not-yet, the keys are served again, at the index
// they were written at.
func TestV2DeprecationAsUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	write := func(snapshotCount string, n int) *Member {
		m := NewMember(t, "--enable-v2", "--snapshot-count", snapshotCount)
		m.Bin = ServerAt(t, OldestLevel)
		m.Start()
		for i := range n {
			if code, _, body := v2Do(t, http.MethodPut, m.ClientURL+"/v2/keys/foo", url.Values{"value": {fmt.Sprint("bar", i)}}); code/100 != 2 {
				t.Fatalf("v2 write: %d %s", code, body)
			}
		}
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
		return m
	}
	// refused starts bin on a copy of from's data dir, expecting a refusal that says want.
	refused := func(from *Member, bin, want string, extra ...string) {
		t.Helper()
		m := NewMember(t, extra...)
		m.Name, m.PeerURL, m.InitialCluster = from.Name, from.PeerURL, from.InitialCluster
		m.Bin = bin
		if out, err := exec.Command("cp", "-a", from.DataDir+"/.", m.DataDir).CombinedOutput(); err != nil {
			t.Fatalf("copy the data dir: %v\n%s", err, out)
		}
		if err := m.StartNoWait(); err != nil {
			t.Fatal(err)
		}
		code, err := m.Wait(30 * time.Second)
		if err != nil || code == 0 || !m.LogHas(want) {
			t.Errorf("%s %v on a data dir with v2 keys: exit %d, %v; want a refusal saying %q\n%s", bin, extra, code, err, want, m.LogTail(8))
		}
	}
	snapped := write("5", 10) // the keys in a snapshot, as upstream's TestV2Deprecation
	walOnly := write("10000", 1)
	const inStore, inWAL = "detected disallowed custom content in v2store for stage --v2-deprecation=write-only",
		"detected disallowed v2 WAL for stage --v2-deprecation=write-only"
	for _, bin := range []string{ServerAt(t, OldestLevel), UpstreamBinaryAt(t, Upstream35Version, "etcd")} {
		refused(snapped, bin, inStore, "--v2-deprecation=write-only")
	}
	for _, bin := range []string{ServerAt(t, LastReleaseLevel), UpstreamBinaryAt(t, Upstream36Version, "etcd")} {
		refused(snapped, bin, inStore)
		refused(walOnly, bin, inWAL)
	}
	snapped.Extra = append(snapped.Extra, "--v2-deprecation=not-yet")
	snapped.Start()
	defer snapped.Stop()
	if code, _, body := v2Do(t, http.MethodGet, snapped.ClientURL+"/v2/keys/foo", nil); code != http.StatusOK ||
		body != `{"action":"get","node":{"key":"/foo","value":"bar9","modifiedIndex":13,"createdIndex":13}}`+"\n" {
		t.Errorf("at not-yet: %d %s", code, body)
	}
}
