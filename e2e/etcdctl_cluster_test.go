package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mustCtl runs our etcdctl and requires exit 0 and output matching the pattern; it returns the
// pattern's submatches.
func mustCtl(t *testing.T, pattern string, args ...string) []string {
	t.Helper()
	code, out := ctl(t, Binary(t, "etcdctl"), "", args...)
	m := regexp.MustCompile(pattern).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("etcdctl %s: exit %d, output does not match %s:\n%s", strings.Join(args, " "), code, pattern, out)
	}
	return m
}

// The lease life cycle through etcdctl: grant, attach, time-to-live with keys, keep-alive once and
// streaming until a revoke ends it, list.
func TestEtcdctlLeases(t *testing.T) {
	m := NewMember(t)
	m.Start()
	ep := "--endpoints=" + m.ClientURL
	id := mustCtl(t, `^lease ([0-9a-f]{16}) granted with TTL\(60s\)\n$`, ep, "lease", "grant", "60")[1]
	mustCtl(t, `^OK\n$`, ep, "put", "leased", "v", "--lease", id)
	mustCtl(t, `^lease `+id+` granted with TTL\(60s\), remaining\((59|60)s\), attached keys\(\[leased\]\)\n$`, ep, "lease", "timetolive", id, "--keys")
	mustCtl(t, `"TTL" : (59|60)\n"GrantedTTL" : 60\n"Key" : "leased"\n$`, ep, "lease", "timetolive", id, "--keys", "-w", "fields")
	mustCtl(t, `^lease `+id+` keepalived with TTL\(60\)\n$`, ep, "lease", "keep-alive", "--once", id)
	mustCtl(t, `^found 1 leases\n`+id+`\n$`, ep, "lease", "list")
	dec, _ := strconv.ParseInt(id, 16, 64)
	mustCtl(t, fmt.Sprintf(`"ID":%d,"TTL":60`, dec), ep, "lease", "keep-alive", "--once", id, "-w", "json")

	mustCtl(t, `^lease `+id+` revoked\n$`, ep, "lease", "revoke", id)
	mustCtl(t, `^$`, ep, "get", "leased")
	mustCtl(t, `^lease `+id+` already expired\n$`, ep, "lease", "timetolive", id)

	// Streaming keep-alive renews every third of the TTL and ends when the lease is revoked.
	short := mustCtl(t, `^lease ([0-9a-f]{16}) granted with TTL\(3s\)\n$`, ep, "lease", "grant", "3")[1]
	ka := StartCtl(t, Binary(t, "etcdctl"), nil, ep, "lease", "keep-alive", short)
	ka.WaitOutput(strings.Repeat("lease "+short+" keepalived with TTL(3)\n", 3), 10*time.Second)
	mustCtl(t, `^lease `+short+` granted with TTL\(3s\), remaining\([23]s\)\n$`, ep, "lease", "timetolive", short)
	mustCtl(t, `^lease `+short+` revoked\n$`, ep, "lease", "revoke", short)
	if code, out := ka.Wait(10 * time.Second); code != 0 || !strings.HasSuffix(out, "lease "+short+" expired or revoked.\n") {
		t.Fatalf("keep-alive after revoke: exit %d\n%s", code, out)
	}
	mustCtl(t, `^found 0 leases\n$`, ep, "lease", "list")
}

// Membership and maintenance through etcdctl on a three-member cluster: a learner added with the
// printed ETCD_* settings joins, is promoted, updated and removed; leadership moves; defrag,
// snapshot, endpoint status and hashkv on every member; downgrade validate, enable and cancel.
func TestEtcdctlMembershipAndMaintenance(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	c := NewCluster(t, 3)
	c.Start()
	all := "--endpoints=" + strings.Join(c.Endpoints(), ",")
	ep := "--endpoints=" + c.Members[0].ClientURL
	c.WaitPeersSettled()

	// member add prints the settings the new member starts with.
	peer := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
	// IDs are printed with %16x: space-padded when they have fewer digits.
	add := mustCtl(t, `^Member +([0-9a-f]+) added as learner to cluster +([0-9a-f]+)\n\n`+
		`ETCD_NAME="m4"\nETCD_INITIAL_CLUSTER="(.*)"\nETCD_INITIAL_ADVERTISE_PEER_URLS="(.*)"\nETCD_INITIAL_CLUSTER_STATE="existing"\n$`,
		ep, "member", "add", "m4", "--learner", "--peer-urls="+peer)
	id, cluster := add[1], add[2]
	if add[4] != peer || !strings.Contains(add[3], "m4="+peer) {
		t.Fatalf("member add settings: %q", add)
	}
	m4 := NewMember(t, "--initial-cluster-state", "existing")
	m4.Name, m4.PeerURL, m4.InitialCluster = "m4", add[4], add[3]
	m4.Start()
	mustCtl(t, id+`, started, m4, `+peer+`, `+m4.ClientURL+`, true\n`, ep, "member", "list")

	// A learner is promoted once it has caught up; until then the server refuses.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, out := ctl(t, Binary(t, "etcdctl"), "", ep, "member", "promote", id)
		if code == 0 {
			if out != fmt.Sprintf("Member %16s promoted in cluster %16s\n", id, cluster) {
				t.Fatalf("member promote: %q", out)
			}
			break
		}
		if time.Now().After(deadline) || !strings.Contains(out, "can only promote a learner member which is in sync with leader") {
			t.Fatalf("member promote: exit %d\n%s", code, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	mustCtl(t, `^Member +`+id+` updated in cluster +`+cluster+`\n$`, ep, "member", "update", id, "--peer-urls="+peer)
	mustCtl(t, id+`, started, m4, `+peer+`, `+m4.ClientURL+`, false\n`, ep, "member", "list")
	// The strict reconfiguration check may refuse for a few seconds after the join.
	deadline = time.Now().Add(30 * time.Second)
	for {
		code, out := ctl(t, Binary(t, "etcdctl"), "", ep, "member", "remove", id)
		if code == 0 && out == fmt.Sprintf("Member %16s removed from cluster %16s\n", id, cluster) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("member remove: exit %d\n%s", code, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if _, err := m4.Wait(20 * time.Second); err != nil {
		t.Fatalf("removed member did not exit: %v", err)
	}

	// Leadership moves to a follower.
	leader := c.Leader(10 * time.Second)
	var from, to string
	for _, m := range c.Members {
		st := mustCtl(t, `^\S+, ([0-9a-f]+), `, "--endpoints="+m.ClientURL, "endpoint", "status")
		if m == leader {
			from = st[1]
		} else {
			to = st[1]
		}
	}
	mustCtl(t, `^Leadership transferred from `+from+` to `+to+`\n$`, all, "move-leader", to)
	mustCtl(t, `, true, false, `, "--endpoints="+c.Members[0].ClientURL+","+c.Members[1].ClientURL+","+c.Members[2].ClientURL, "endpoint", "status")

	// Maintenance on every member.
	mustCtl(t, `(?s)(Finished defragmenting etcd member\[http://127\.0\.0\.1:\d+\]\. took \S+\n){3}$`, ep, "defrag", "--cluster")
	release, storage := regexp.QuoteMeta(ReleaseOf(CurrentLevel)), regexp.QuoteMeta(CurrentLevel+".0")
	mustCtl(t, `(?s)^(http://127\.0\.0\.1:\d+, [0-9a-f]+, `+release+`, `+storage+`, [^\n]+\n){3}$`, ep, "endpoint", "status", "--cluster")
	hashes := mustCtl(t, `^http://\S+, (\d+), \d+\nhttp://\S+, (\d+), \d+\nhttp://\S+, (\d+), \d+\n$`, ep, "endpoint", "hashkv", "--cluster")
	if hashes[1] != hashes[2] || hashes[2] != hashes[3] {
		t.Fatalf("members' hashes differ: %v", hashes[1:])
	}
	snap := filepath.Join(t.TempDir(), "snap.db")
	mustCtl(t, `Snapshot saved at `+regexp.QuoteMeta(snap)+`\nServer version `+storage+`\n$`, ep, "snapshot", "save", snap) // the storage version, as upstream
	if code, out := etcdutl(t, "snapshot", "status", snap, "-w", "table"); code != 0 || !strings.Contains(out, CurrentLevel+".0") {
		t.Fatalf("etcdutl snapshot status of etcdctl's snapshot: exit %d\n%s", code, out)
	}

	cur, prev := regexp.QuoteMeta(CurrentLevel), regexp.QuoteMeta(LastReleaseLevel)
	mustCtl(t, `^Downgrade validate success, cluster version `+cur+`\n$`, ep, "downgrade", "validate", LastReleaseLevel)
	mustCtl(t, `^Downgrade enable success, cluster version `+cur+`\n$`, ep, "downgrade", "enable", LastReleaseLevel)
	mustCtl(t, `^Downgrade cancel success, cluster version (`+cur+`|`+prev+`)\n$`, ep, "downgrade", "cancel")
}

// The out-of-space runbook: a member over its quota raises NOSPACE and refuses writes; compaction,
// defrag and alarm disarm bring it back.
func TestEtcdctlNoSpaceAlarm(t *testing.T) {
	m := NewMember(t, "--quota-backend-bytes", strconv.Itoa(4<<20))
	m.Start()
	ep := "--endpoints=" + m.ClientURL
	value := strings.Repeat("x", 256<<10)
	full := false
	for i := 0; i < 100 && !full; i++ {
		code, out := ctl(t, Binary(t, "etcdctl"), value, ep, "put", "big")
		switch {
		case code == 0:
		case strings.Contains(out, "etcdserver: mvcc: database space exceeded"):
			full = true
		default:
			t.Fatalf("put: exit %d\n%s", code, out)
		}
	}
	if !full {
		t.Fatal("100 puts of 256 KiB never exceeded a 4 MiB quota")
	}
	memberID := mustCtl(t, `^memberID:(\d+) alarm:NOSPACE \n$`, ep, "alarm", "list")[1]
	rev := mustCtl(t, `"revision":(\d+)`, ep, "get", "big", "-w", "json")[1]
	mustCtl(t, `^compacted revision `+rev+`\n$`, ep, "compaction", "--physical", rev)
	mustCtl(t, `Finished defragmenting etcd member`, ep, "defrag")
	mustCtl(t, `^memberID:`+memberID+` alarm:NOSPACE \n$`, ep, "alarm", "disarm")
	mustCtl(t, `^$`, ep, "alarm", "list")
	mustCtl(t, `^OK\n$`, ep, "put", "small", "fits again")
}
