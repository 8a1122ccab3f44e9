package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"etcdx/server/snap"
	"etcdx/server/v2store"
)

// v2Do sends one v2 API request and returns its status, X-Etcd-Index and body.
func v2Do(t *testing.T, method, u string, form url.Values) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Etcd-Index"), string(b)
}

// withoutTTL drops the TTLs (seconds left, which depend on when they are read) from a v2 node.
func withoutTTL(n *v2store.Node) {
	n.TTL = 0
	for _, c := range n.Nodes {
		withoutTTL(c)
	}
}

func trimKeys(n *v2store.Node, prefix string) {
	n.Key = strings.TrimPrefix(n.Key, prefix)
	for _, c := range n.Nodes {
		trimKeys(c, prefix)
	}
}

// TestV2StoreAgreesWithUpstream35: ours at 3.5 beside two upstream 3.5.35 members serving the v2
// API. v2 writes of every kind go through upstream's members; ours applies them to its v2 store
// in raft order, with the membership mirrored under /0 at the same indexes; as the leader, ours
// expires the TTL keys by its SYNC requests on every member. The v2 store in
// ours' raft snapshot then equals what upstream answers: every node, value, created and
// modified index, expiry, and the store's index.
func TestV2StoreAgreesWithUpstream35(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	c := NewCluster(t, 3, "--snapshot-count", "5")
	for _, m := range c.Members[:2] {
		m.Bin = UpstreamBinaryAt(t, Upstream35Version, "etcd")
		m.Extra = append(m.Extra, "--enable-v2")
	}
	ours := c.Members[2]
	ours.Bin = ServerAt(t, OldestLevel)
	c.Start()
	c.WaitPeersSettled()
	// Ours leads: its SYNC requests expire the TTL keys on every member.
	if lead := c.Leader(15 * time.Second); lead != ours {
		st, err := ours.Client().Status(Ctx(t), ours.ClientURL)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lead.Client().MoveLeader(Ctx(t), st.Header.MemberId); err != nil {
			t.Fatalf("move the leadership to ours: %v", err)
		}
	}
	up := c.Members[0].ClientURL + "/v2/keys"
	steps := []struct {
		method, path string
		form         url.Values
		status       int
	}{
		{"PUT", "/a", url.Values{"value": {"1"}}, 201},
		{"PUT", "/a", url.Values{"value": {"2"}}, 200},
		{"PUT", "/dir/sub/x", url.Values{"value": {"x"}}, 201},
		{"PUT", "/dir/_hidden", url.Values{"value": {"h"}}, 201},
		{"POST", "/queue", url.Values{"value": {"job1"}}, 201},
		{"POST", "/queue", url.Values{"value": {"job2"}}, 201},
		{"PUT", "/ttl", url.Values{"value": {"t"}, "ttl": {"3600"}}, 201},
		{"PUT", "/a", url.Values{"value": {"3"}, "prevValue": {"2"}}, 200},
		{"PUT", "/a", url.Values{"value": {"4"}, "prevValue": {"nope"}}, 412},
		{"PUT", "/new", url.Values{"value": {"n"}, "prevExist": {"false"}}, 201},
		{"PUT", "/new", url.Values{"value": {"n2"}, "prevExist": {"true"}}, 200},
		{"PUT", "/emptydir", url.Values{"dir": {"true"}}, 201},
		{"DELETE", "/dir/sub/x", nil, 200},
		{"DELETE", "/new", url.Values{"prevValue": {"n2"}}, 200},
		{"PUT", "/gone", url.Values{"value": {"g"}, "ttl": {"1"}}, 201},
	}
	for _, st := range steps {
		u := up + st.path
		if st.method == "DELETE" && st.form != nil {
			u += "?" + st.form.Encode()
			st.form = nil
		}
		if code, _, body := v2Do(t, st.method, u, st.form); code != st.status {
			t.Fatalf("%s %s: %d %s, want %d", st.method, st.path, code, body, st.status)
		}
	}
	// The leader expires /gone by a SYNC request; then ours takes a snapshot after a few more
	// (v3) entries.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if code, _, _ := v2Do(t, "GET", up+"/gone", nil); code == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the 1 s TTL key never expired")
		}
		time.Sleep(200 * time.Millisecond)
	}
	_, upIndex, upBody := v2Do(t, "GET", up+"/?recursive=true&sorted=true", nil)
	writeN(t, c.Client(), "v3", 12)
	if err := ours.Stop(); err != nil {
		t.Fatal(err)
	}

	snaps, err := snap.List(filepath.Join(ours.DataDir, "member", "snap"))
	if err != nil || len(snaps) == 0 {
		t.Fatalf("ours took no raft snapshot: %v", err)
	}
	sn, err := snap.Load(snaps[0])
	if err != nil {
		t.Fatal(err)
	}
	st := v2store.New(time.Now, v2store.ClusterPrefix, v2store.KeysPrefix)
	if err := st.Recover(sn.Data); err != nil {
		t.Fatalf("ours' snapshot's v2 store: %v", err)
	}
	if got := fmt.Sprint(st.Index()); got != upIndex {
		t.Errorf("v2 store index: ours %s, upstream %s", got, upIndex)
	}
	ev, err := st.Get("/1", true, true)
	if err != nil {
		t.Fatal(err)
	}
	trimKeys(ev.Node, "/1")
	var upEv v2store.Event
	if err := json.Unmarshal([]byte(upBody), &upEv); err != nil {
		t.Fatalf("upstream's answer %s: %v", upBody, err)
	}
	withoutTTL(ev.Node)
	withoutTTL(upEv.Node)
	oursJSON, _ := json.Marshal(ev.Node)
	upJSON, _ := json.Marshal(upEv.Node)
	if string(oursJSON) != string(upJSON) {
		t.Errorf("v2 keys differ:\nours:     %s\nupstream: %s", oursJSON, upJSON)
	}
	// The membership under /0: the three members, each with its published attributes.
	mem, err := st.Get("/0/members", true, true)
	if err != nil || len(mem.Node.Nodes) != 3 {
		t.Fatalf("ours' v2 store membership: %+v %v", mem, err)
	}
	for _, m := range mem.Node.Nodes {
		if len(m.Nodes) != 2 {
			t.Errorf("member %s in ours' v2 store: %d nodes, want raftAttributes and attributes", m.Key, len(m.Nodes))
		}
	}
}
