package discovery

import (
	"errors"
	"strings"
	"testing"
)

func TestKeyLayoutIsUpstreams(t *testing.T) {
	if got := SizeKey("tok"); got != "/_etcd/registry/tok/_config/size" {
		t.Errorf("size key %q", got)
	}
	if got := MemberKey("tok", 0x8e9e05c52164694d); got != "/_etcd/registry/tok/members/8e9e05c52164694d" {
		t.Errorf("member key %q", got)
	}
	if got := MemberKey("tok", 0xabc); got != "/_etcd/registry/tok/members/abc" {
		t.Errorf("member key without padding %q", got)
	}
	if got := TokenPrefix("a"); got != "/_etcd/registry/a/" {
		t.Errorf("token prefix %q must end in a slash so token a does not cover token ab", got)
	}
}

func TestValidToken(t *testing.T) {
	for _, bad := range []string{"", "a/b", "a b", ".", "..", "x\n"} {
		if ValidToken(bad) == nil {
			t.Errorf("token %q accepted", bad)
		}
	}
	for _, good := range []string{"abc", "9746335d6d6291c8e0101ebd56b1a12f", "my-cluster_1.prod"} {
		if err := ValidToken(good); err != nil {
			t.Errorf("token %q refused: %v", good, err)
		}
	}
}

func member(id, value string, rev int64) Member {
	return Member{Key: MembersPrefix("t") + "/" + id, Value: value, CreateRevision: rev}
}

func TestInitialClusterTakesTheFirstSizeMembers(t *testing.T) {
	st := State{Token: "t", Size: 2, Members: []Member{
		member("1", "a=http://10.0.0.1:2380", 5),
		member("2", "b=http://10.0.0.2:2380,b=http://10.0.1.2:2380", 6),
		member("3", "c=http://10.0.0.3:2380", 7),
	}}
	if !st.Complete() {
		t.Fatal("two of two registered but not complete")
	}
	got, err := st.InitialCluster()
	if err != nil || got != "a=http://10.0.0.1:2380,b=http://10.0.0.2:2380,b=http://10.0.1.2:2380" {
		t.Fatalf("initial cluster %q, %v", got, err)
	}
	if st.Position(MembersPrefix("t")+"/3") != 2 || st.Position("nope") != -1 {
		t.Error("positions follow registration order")
	}
	if names := st.Members[1].Name(); names != "b" {
		t.Errorf("name %q", names)
	}
	if urls := st.Members[1].PeerURLs(); strings.Join(urls, " ") != "http://10.0.0.2:2380 http://10.0.1.2:2380" {
		t.Errorf("peer URLs %v", urls)
	}
}

func TestInitialClusterRefusesBadRegistrations(t *testing.T) {
	cases := map[string][]Member{
		"is not name=url":          {member("1", "garbage", 1)},
		"not an http(s) URL":       {member("1", "a=ftp://x:1", 1)},
		"more than one member":     {member("1", "a=http://x:1,b=http://y:1", 1)},
		"registered the same name": {member("1", "a=http://x:1", 1), member("2", "a=http://y:1", 2)},
		"the same peer URL":        {member("1", "a=http://x:1", 1), member("2", "b=http://x:1", 2)},
	}
	for want, ms := range cases {
		st := State{Token: "t", Size: len(ms), Members: ms}
		_, err := st.InitialCluster()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error %v, want %q", ms, err, want)
		}
	}
	st := State{Token: "t", Size: 1, Members: []Member{member("1", "garbage", 1)}}
	if _, err := st.InitialCluster(); !errors.Is(err, ErrInvalidURL) {
		t.Errorf("a malformed registration is %v, want ErrInvalidURL", err)
	}
}
