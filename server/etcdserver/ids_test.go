package etcdserver

import (
	"testing"
	"time"
)

// Upstream etcd 3.6.16 assigned b5179d13d0285315 to a member with peer URL
// http://127.0.0.1:24380 and the default token; the same flags must give the same ID here.
func TestMemberIDMatchesUpstream(t *testing.T) {
	if got := MemberID([]string{"http://127.0.0.1:24380"}, "etcd-cluster"); got != 0xb5179d13d0285315 {
		t.Fatalf("member ID = %x, want b5179d13d0285315", got)
	}
	a := MemberID([]string{"http://b:2380", "http://a:2380"}, "t")
	if b := MemberID([]string{"http://a:2380", "http://b:2380"}, "t"); a != b {
		t.Fatal("member ID depends on peer URL order")
	}
	if MemberID([]string{"http://a:2380"}, "t1") == MemberID([]string{"http://a:2380"}, "t2") {
		t.Fatal("member ID ignores the cluster token")
	}
}

func TestIDGeneratorUniqueAndPrefixed(t *testing.T) {
	g := newIDGenerator(0xabcd1234, time.Now())
	seen := map[uint64]bool{}
	for i := 0; i < 10000; i++ {
		id := g.next()
		if seen[id] || id>>48 != 0x1234 {
			t.Fatalf("id %x repeated or without the member prefix", id)
		}
		seen[id] = true
	}
}
