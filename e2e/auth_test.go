package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// Identities that differ between two clusters: member and cluster IDs in every format.
var clusterIdentity = []*regexp.Regexp{
	regexp.MustCompile(`"(cluster_id|member_id)":\d+`),
	regexp.MustCompile(`"(ClusterID|MemberID)" : [0-9a-f]+`),
}

func normalizeIdentity(s string) string {
	for _, re := range clusterIdentity {
		s = re.ReplaceAllString(s, "<id>")
	}
	return normalize(s)
}

// authScript is one operator's session with auth: users, roles and permissions made and
// changed, auth turned on and off, and each caller's requests allowed or refused. It runs
// through etcdctl against the member at ep; the outputs are compared between implementations.
func authScript(ep string) []struct {
	stdin string
	args  []string
} {
	type step = struct {
		stdin string
		args  []string
	}
	e := "--endpoints=" + ep
	root := []string{e, "--user=root:rootpw"}
	alice := []string{e, "--user=alice:alicepw"}
	as := func(who []string, args ...string) step { return step{"", append(append([]string{}, who...), args...)} }
	anon := func(args ...string) step { return step{"", append([]string{e}, args...)} }
	return []step{
		anon("auth", "status"),
		anon("auth", "status", "-w", "json"),
		anon("auth", "enable"),
		anon("user", "add", "root:rootpw"),
		anon("user", "add", "root:again"),
		anon("user", "add", ":nameless"),
		anon("user", "add"),
		anon("put", "before", "auth"),
		anon("auth", "enable"),
		anon("auth", "enable", "extra"),
		anon("auth", "status"),
		anon("get", "before"),
		anon("put", "k", "v"),
		as(root, "auth", "status"),
		as(root, "auth", "status", "-w", "fields"),
		as(root, "user", "add", "alice", "--new-user-password=alicepw"),
		{"bobpw\n", append(append([]string{}, root...), "user", "add", "bob", "--interactive=false")},
		as(root, "user", "add", "carol", "--no-password", "-w", "fields"),
		as(root, "role", "add", "r1"),
		as(root, "role", "add", "r1"),
		as(root, "role", "add", "r2", "-w", "json"),
		as(root, "role", "grant-permission", "r1", "readwrite", "/a/", "--prefix"),
		as(root, "role", "grant-permission", "r1", "read", "/b"),
		as(root, "role", "grant-permission", "r1", "write", "/c", "/d"),
		as(root, "role", "grant-permission", "r1", "read", "/e", "--from-key"),
		as(root, "role", "grant-permission", "r1", "readwrite", "/b"),
		as(root, "role", "grant-permission", "r1", "bogus", "/x"),
		as(root, "role", "grant-permission", "r1", "read", "/a/", "/b", "--prefix"),
		as(root, "role", "grant-permission", "r1", "read", "/a/", "--prefix", "--from-key"),
		as(root, "role", "grant-permission", "r1", "read", "/z", "/y"),
		as(root, "role", "grant-permission", "nosuch", "read", "/x"),
		as(root, "role", "grant-permission", "r2", "read", "", "--prefix"),
		as(root, "role", "get", "r1"),
		as(root, "role", "get", "r1", "-w", "json"),
		as(root, "role", "get", "r1", "-w", "fields"),
		as(root, "role", "get", "r1", "-w", "table"),
		as(root, "role", "get", "r2"),
		as(root, "role", "get", "root"),
		as(root, "role", "get", "root", "-w", "json"),
		as(root, "role", "get", "nosuch"),
		as(root, "user", "grant-role", "alice", "r1"),
		as(root, "user", "grant-role", "alice", "r1"),
		as(root, "user", "grant-role", "alice", "nosuch"),
		as(root, "user", "grant-role", "nosuch", "r1"),
		as(root, "user", "grant-role", "bob", "r2", "-w", "fields"),
		as(root, "user", "get", "alice"),
		as(root, "user", "get", "alice", "--detail"),
		as(root, "user", "get", "alice", "-w", "json"),
		as(root, "user", "get", "alice", "-w", "fields"),
		as(root, "user", "get", "nosuch"),
		as(root, "user", "list"),
		as(root, "user", "list", "-w", "json"),
		as(root, "role", "list"),
		as(root, "role", "list", "-w", "fields"),
		as(alice, "put", "/a/1", "one"),
		as(alice, "put", "/z", "no"),
		as(alice, "put", "/b", "now-writable"),
		as(alice, "put", "/c", "write-only"),
		as(alice, "get", "/c"),
		as(alice, "get", "/a/1"),
		as(alice, "get", "/a/", "--prefix"),
		as(alice, "get", "/", "--prefix"),
		as(alice, "get", "/e", "--from-key"),
		as(alice, "get", "/f"),
		as(alice, "del", "/a/1", "--prev-kv"),
		as(alice, "del", "/c", "--prev-kv"),
		as(alice, "user", "get", "alice"),
		as(alice, "user", "get", "bob"),
		as(alice, "role", "get", "r1"),
		as(alice, "role", "get", "r2"),
		as(alice, "user", "list"),
		as(alice, "auth", "status"),
		as(alice, "compaction", "1"),
		as(alice, "lease", "list"),
		as(alice, "alarm", "list"),
		as(alice, "alarm", "disarm"),
		anon("--user=alice:wrong", "get", "/a/1"),
		anon("--user=carol:any", "get", "/a/1"),
		anon("--user=nosuch:any", "get", "/a/1"),
		{"alicepw2\n", append(append([]string{}, root...), "user", "passwd", "alice", "--interactive=false")},
		as(alice, "get", "/b"),
		anon("--user=alice:alicepw2", "get", "/b"),
		as(root, "role", "revoke-permission", "r1", "/b"),
		as(root, "role", "revoke-permission", "r1", "/a/", "--prefix"),
		as(root, "role", "revoke-permission", "r1", "/e", "--from-key"),
		as(root, "role", "revoke-permission", "r1", "/c", "/d", "-w", "fields"),
		as(root, "role", "revoke-permission", "r1", "/nope"),
		as(root, "role", "revoke-permission", "r2", "", "--prefix"),
		as(root, "role", "get", "r1"),
		as(root, "user", "revoke-role", "alice", "r1"),
		as(root, "user", "revoke-role", "alice", "r1"),
		as(root, "user", "revoke-role", "root", "root"),
		as(root, "user", "delete", "root"),
		as(root, "role", "delete", "root"),
		as(root, "user", "delete", "bob"),
		as(root, "user", "delete", "bob"),
		as(root, "role", "delete", "r2"),
		as(root, "user", "get", "carol"),
		as(root, "auth", "status"),
		as(root, "get", "", "--prefix", "--keys-only"),
		as(root, "auth", "disable"),
		anon("auth", "status"),
		anon("auth", "disable"),
		anon("role", "delete", "root"),
		anon("user", "revoke-role", "root", "root"),
		anon("user", "list"),
		anon("role", "list", "-w", "json"),
		anon("get", "", "--prefix"),
	}
}

// The auth session through upstream etcdctl against upstream etcd, and through ours against
// ours, at 3.7 (3.7.3) and at 3.6 (3.6.16, ours from bin/levels/3.6): the same output (tables in
// each line's own style), exit status and auth revisions at every step.
func TestAuthEtcdctlMatchesUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	for _, level := range []string{CurrentLevel, LastReleaseLevel} {
		t.Run(level, func(t *testing.T) { authSessionAsUpstream(t, level) })
	}
}

func authSessionAsUpstream(t *testing.T, level string) {
	release := "v" + ReleaseOf(level)
	up := NewMember(t)
	up.Bin = UpstreamBinaryAt(t, release, "etcd")
	up.Start()
	// At debug level every request is logged: the passwords must still never be.
	ours := NewMember(t, "--log-level", "debug")
	ours.Bin = ServerAt(t, level)
	ours.Start()
	upCtl, ourCtl := UpstreamBinaryAt(t, release, "etcdctl"), ToolAt(t, level, "etcdctl")
	upSteps, ourSteps := authScript(up.ClientURL), authScript(ours.ClientURL)
	for i := range upSteps {
		ucode, uout := ctl(t, upCtl, upSteps[i].stdin, upSteps[i].args...)
		ocode, oout := ctl(t, ourCtl, ourSteps[i].stdin, ourSteps[i].args...)
		uout, oout = normalizeIdentity(uout), normalizeIdentity(oout)
		if ucode != ocode || uout != oout {
			t.Errorf("step %d: etcdctl %s\n--- upstream (exit %d) ---\n%s\n--- ours (exit %d) ---\n%s", i,
				strings.Join(upSteps[i].args[1:], " "), ucode, uout, ocode, oout)
		}
	}
	for _, pw := range []string{"rootpw", "alicepw", "bobpw", "alicepw2"} {
		if strings.Contains(ours.Log(), pw) {
			t.Errorf("the member's log holds the password %q", pw)
		}
	}
	if t.Failed() {
		fmt.Println(ours.LogTail(30))
	}
}
