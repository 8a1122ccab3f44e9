package membership

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"
)

// Upstream 3.5 proposes some changes as bare v2 requests (etcdserverpb.Request entries, not
// wrapped in an InternalRaftRequest): every member publishes its name and client URLs that way
// when it starts, and the cluster version may be set that way. Upstream 3.6 applies those two as
// their v3 requests; anything else it refuses ("custom v2 content", which etcdutl check v2store
// looks for), and a leader with v2 TTL keys proposes SYNC requests, which change no v3 state;
// 3.4 commits a quorum read (QGET) for every /health request (3.5 too with --enable-v2), which
// changes nothing at all.

var (
	v2MemberAttributes = regexp.MustCompile(`^/0/members/([[:xdigit:]]{1,16})/attributes$`)
	// ErrV2NoEffect is a v2 request with no v3 effect (SYNC, a quorum read).
	ErrV2NoEffect = errors.New("a v2 request with no effect on the v3 store")
)

// v2ClusterVersionKey is where the v2 store keeps the cluster version.
const v2ClusterVersionKey = "/0/version"

// FromV2 is the v3 request upstream 3.6 applies for an upstream 3.5 v2 request r.
func FromV2(r *pb.Request) (*pb.InternalRaftRequest, error) {
	if r.Method == "SYNC" || r.Method == "QGET" {
		return nil, ErrV2NoEffect
	}
	if r.Method != http.MethodPut {
		return nil, fmt.Errorf("custom v2 content: %s %s", r.Method, r.Path)
	}
	hdr := &pb.RequestHeader{ID: r.ID}
	if m := v2MemberAttributes.FindStringSubmatch(r.Path); m != nil {
		id, err := strconv.ParseUint(m[1], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("v2 member attributes at %s: %w", r.Path, err)
		}
		var a v2Attributes
		if err := json.Unmarshal([]byte(r.Val), &a); err != nil {
			return nil, fmt.Errorf("v2 member attributes at %s: %w", r.Path, err)
		}
		return &pb.InternalRaftRequest{Header: hdr, ClusterMemberAttrSet: &membershippb.ClusterMemberAttrSetRequest{
			Member_ID: id, MemberAttributes: &membershippb.Attributes{Name: a.Name, ClientUrls: a.ClientURLs}}}, nil
	}
	if r.Path == v2ClusterVersionKey {
		return &pb.InternalRaftRequest{Header: hdr, ClusterVersionSet: &membershippb.ClusterVersionSetRequest{Ver: r.Val}}, nil
	}
	return nil, fmt.Errorf("custom v2 content: %s %s", r.Method, r.Path)
}

// ToV2 is the bare v2 request upstream 3.5 proposes in place of r, with r's request ID: a
// member's published attributes, or the cluster version. ok is false for any other request.
func ToV2(r *pb.InternalRaftRequest) (v2 *pb.Request, ok bool, err error) {
	var id uint64
	if r.Header != nil {
		id = r.Header.ID
	}
	switch {
	case r.ClusterMemberAttrSet != nil:
		a := r.ClusterMemberAttrSet.MemberAttributes
		if a == nil {
			return nil, false, fmt.Errorf("member attributes of %x: none", r.ClusterMemberAttrSet.Member_ID)
		}
		b, err := json.Marshal(v2Attributes{Name: a.Name, ClientURLs: a.ClientUrls})
		if err != nil {
			return nil, false, fmt.Errorf("member attributes of %x: %w", r.ClusterMemberAttrSet.Member_ID, err)
		}
		return &pb.Request{ID: id, Method: http.MethodPut, Path: fmt.Sprintf("/0/members/%x/attributes", r.ClusterMemberAttrSet.Member_ID),
			Val: string(b)}, true, nil
	case r.ClusterVersionSet != nil:
		return &pb.Request{ID: id, Method: http.MethodPut, Path: v2ClusterVersionKey, Val: r.ClusterVersionSet.Ver}, true, nil
	}
	return nil, false, nil
}

// DecodeEntryData reads a normal entry's request: a v3 request, or the v2 request the entry
// carries (bare, as etcd 3.5 proposes it, or inside a v3 request's V2 field). Both are nil when
// neither form decodes; err is then why the v3 form did not.
func DecodeEntryData(data []byte) (r3 *pb.InternalRaftRequest, v2 *pb.Request, err error) {
	var r pb.InternalRaftRequest
	if err = r.Unmarshal(data); err == nil {
		if r.V2 != nil {
			return nil, r.V2, nil
		}
		return &r, nil, nil
	}
	var bare pb.Request
	if bare.Unmarshal(data) != nil {
		return nil, nil, err
	}
	return nil, &bare, nil
}
