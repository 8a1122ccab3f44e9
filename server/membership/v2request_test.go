package membership

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"
)

func TestFromV2(t *testing.T) {
	for _, c := range []struct {
		name string
		r    pb.Request
		want string // the converted request, or the error's start
	}{
		{"a member publishes", pb.Request{ID: 7, Method: "PUT", Path: "/0/members/8e9e05c52164694d/attributes", Val: `{"name":"m1","clientURLs":["http://127.0.0.1:2379"]}`},
			"member 8e9e05c52164694d: m1 [http://127.0.0.1:2379]"},
		{"the cluster version", pb.Request{ID: 8, Method: "PUT", Path: "/0/version", Val: "3.5.0"}, "cluster version 3.5.0"},
		{"SYNC", pb.Request{Method: "SYNC"}, "a v2 request with no effect"},
		{"3.4's /health read", pb.Request{Method: "QGET"}, "a v2 request with no effect"},
		{"a custom key", pb.Request{Method: "PUT", Path: "/1/foo", Val: "x"}, "custom v2 content: PUT /1/foo"},
		{"a delete", pb.Request{Method: "DELETE", Path: "/0/version"}, "custom v2 content: DELETE /0/version"},
		{"not the attributes", pb.Request{Method: "PUT", Path: "/0/members/8e9e05c52164694d/raftAttributes", Val: "{}"}, "custom v2 content"},
		{"bad JSON", pb.Request{Method: "PUT", Path: "/0/members/1/attributes", Val: "{"}, "v2 member attributes at /0/members/1/attributes"},
	} {
		got, err := FromV2(&c.r)
		var s string
		switch {
		case err != nil:
			s = err.Error()
		case got.ClusterMemberAttrSet != nil:
			a := got.ClusterMemberAttrSet
			s = fmt.Sprintf("member %x: %s %v", a.Member_ID, a.MemberAttributes.Name, a.MemberAttributes.ClientUrls)
			if got.Header.ID != c.r.ID {
				s += " (lost the request ID)"
			}
		case got.ClusterVersionSet != nil:
			s = "cluster version " + got.ClusterVersionSet.Ver
		}
		if !strings.HasPrefix(s, c.want) {
			t.Errorf("%s: %q, want %q", c.name, s, c.want)
		}
	}
	if _, err := FromV2(&pb.Request{Method: "SYNC"}); !errors.Is(err, ErrV2NoEffect) {
		t.Errorf("SYNC: %v", err)
	}
}

func TestV2StoreHasCustomContent(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		custom    bool
	}{
		{"membership only", `{"Root":{"Children":{"0":{"Children":{"members":{},"version":{"Value":"3.5.0"}}}}}}`, false},
		{"empty auth directories", `{"Root":{"Children":{"0":{},"2":{"Children":{"users":{},"roles":{}}}}}}`, false},
		{"a v2 user", `{"Root":{"Children":{"0":{},"2":{"Children":{"users":{"Children":{"root":{}}}}}}}}`, true},
		{"a v2 key", `{"Root":{"Children":{"0":{},"1":{"Children":{"foo":{"Value":"bar"}}}}}}`, true},
		{"auth switch and empty auth directories", `{"Root":{"Children":{"2":{"Children":{"enabled":{"Value":"true"},"users":{"Children":{}}}}}}}`, false},
		{"a v2 role", `{"Root":{"Children":{"2":{"Children":{"roles":{"Children":{"guest":{"Value":"{}"}}}}}}}}`, true},
		{"the empty keys namespace", `{"Root":{"Children":{"0":{},"1":{"Children":{}}}}}`, false},
	} {
		got, err := V2StoreHasCustomContent([]byte(c.doc))
		if err != nil || got != c.custom {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.custom)
		}
	}
	if _, err := V2StoreHasCustomContent([]byte("{")); err == nil {
		t.Error("a broken document was read")
	}
}

// ToV2 writes what upstream 3.5 proposes, and FromV2 reads it back as the same v3 request.
func TestToV2RoundTrip(t *testing.T) {
	for _, r := range []*pb.InternalRaftRequest{
		{Header: &pb.RequestHeader{ID: 7}, ClusterMemberAttrSet: &membershippb.ClusterMemberAttrSetRequest{Member_ID: 0x8e9e05c52164694d,
			MemberAttributes: &membershippb.Attributes{Name: "m1", ClientUrls: []string{"http://127.0.0.1:2379"}}}},
		{Header: &pb.RequestHeader{ID: 8}, ClusterVersionSet: &membershippb.ClusterVersionSetRequest{Ver: "3.5.0"}},
	} {
		v2, ok, err := ToV2(r)
		if err != nil || !ok {
			t.Fatalf("ToV2(%v) = %v, %v", r, ok, err)
		}
		if r.ClusterMemberAttrSet != nil && (v2.Path != "/0/members/8e9e05c52164694d/attributes" || v2.Val != `{"name":"m1","clientURLs":["http://127.0.0.1:2379"]}`) {
			t.Errorf("attributes as v2: %s %s", v2.Path, v2.Val)
		}
		back, err := FromV2(v2)
		if err != nil || back.String() != r.String() {
			t.Errorf("round trip: %v -> %v -> %v (%v)", r, v2, back, err)
		}
	}
	if _, ok, _ := ToV2(&pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("k")}}); ok {
		t.Error("a put has no v2 form here")
	}
}

// An entry's request in each form it comes: v3, bare v2, v2 inside a v3 request, neither.
func TestDecodeEntryData(t *testing.T) {
	v3, _ := (&pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("k")}}).Marshal()
	bare, _ := (&pb.Request{Method: "PUT", Path: "/1/k"}).Marshal()
	wrapped, _ := (&pb.InternalRaftRequest{V2: &pb.Request{Method: "QGET"}}).Marshal()
	if r3, v2, err := DecodeEntryData(v3); r3 == nil || v2 != nil || err != nil {
		t.Errorf("v3: %v %v %v", r3, v2, err)
	}
	if r3, v2, err := DecodeEntryData(bare); r3 != nil || v2 == nil || v2.Path != "/1/k" || err != nil {
		t.Errorf("bare v2: %v %v %v", r3, v2, err)
	}
	if r3, v2, err := DecodeEntryData(wrapped); r3 != nil || v2 == nil || v2.Method != "QGET" || err != nil {
		t.Errorf("wrapped v2: %v %v %v", r3, v2, err)
	}
	if r3, v2, err := DecodeEntryData([]byte{0xff, 0xff, 0xff}); r3 != nil || v2 != nil || err == nil {
		t.Errorf("garbage: %v %v %v", r3, v2, err)
	}
}
