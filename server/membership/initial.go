package membership

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"go.etcd.io/raft/v3/raftpb"
)

// Upstream's defaults for the flags that name a member of a new cluster (etcd and etcdutl
// snapshot restore share them).
const (
	DefaultName    = "default"
	DefaultPeerURL = "http://localhost:2380"
	DefaultToken   = "etcd-cluster"
)

// ParseInitialCluster reads --initial-cluster ("name=url,name=url2,other=url3"): a member may
// have several peer URLs; each name's URLs come back sorted.
func ParseInitialCluster(s string) (map[string][]string, error) {
	m := map[string][]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, u, ok := strings.Cut(part, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not of the form name=url", part)
		}
		if _, err := ParseURL(u); err != nil {
			return nil, err
		}
		m[name] = append(m[name], u)
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("empty initial cluster")
	}
	for _, urls := range m {
		sort.Strings(urls)
	}
	return m, nil
}

// Initial is the membership a new cluster starts with: what a bootstrapping member, a restored
// snapshot and a discovery bootstrap all derive from the same flags.
type Initial struct {
	// Members in name order, with upstream's IDs.
	Members   []Member
	SelfID    uint64
	ClusterID uint64
}

// FlagsError is a --name, --initial-cluster and --initial-advertise-peer-urls that do not name
// this member consistently. Its text is the server's; etcdutl words it its own way.
type FlagsError struct {
	Name string
	// InCluster are the name's URLs in --initial-cluster, nil when the name is missing there.
	InCluster []string
	PeerURLs  []string
}

func (e *FlagsError) Error() string {
	if e.InCluster == nil {
		return fmt.Sprintf("couldn't find local name %q in the initial cluster configuration", e.Name)
	}
	return fmt.Sprintf("--initial-cluster has %s=%v but missing from --initial-advertise-peer-urls=%v", e.Name, e.InCluster, e.PeerURLs)
}

// NewInitial builds the initial membership of member name (advertising peerURLs) in cluster,
// refusing flags that do not name this member consistently (*FlagsError).
func NewInitial(name string, peerURLs []string, cluster map[string][]string, token string) (*Initial, error) {
	self, ok := cluster[name]
	if !ok {
		return nil, &FlagsError{Name: name, PeerURLs: peerURLs}
	}
	if !SameURLs(self, peerURLs) {
		return nil, &FlagsError{Name: name, InCluster: self, PeerURLs: peerURLs}
	}
	names := make([]string, 0, len(cluster))
	for n := range cluster {
		names = append(names, n)
	}
	sort.Strings(names)
	in := &Initial{SelfID: MemberID(peerURLs, token)}
	ids := make([]uint64, 0, len(names))
	for _, n := range names {
		m := Member{ID: MemberID(cluster[n], token), PeerURLs: cluster[n], Name: n}
		in.Members = append(in.Members, m)
		ids = append(ids, m.ID)
	}
	in.ClusterID = ClusterID(ids)
	return in, nil
}

// ConfChangeContext is how a member rides in a conf change: its JSON, as upstream.
func ConfChangeContext(m Member) ([]byte, error) {
	return changeContext(m, false)
}

// PromoteContext is the context of a learner's promotion: upstream marks it with isPromote,
// since an addition and a promotion are the same raft change type.
func PromoteContext(m Member) ([]byte, error) {
	return changeContext(m, true)
}

// changeContext is upstream's ConfigChangeContext: the member's JSON with an isPromote flag.
func changeContext(m Member, promote bool) ([]byte, error) {
	b, err := json.Marshal(struct {
		Member
		IsPromote bool `json:"isPromote"`
	}{m, promote})
	if err != nil {
		return nil, fmt.Errorf("encode member %x: %w", m.ID, err)
	}
	return b, nil
}

// BootstrapEntries are the committed log a restored member starts from: one conf change adding
// each initial member, at term 1 and indexes 1..n (what StartNode would have written).
func (in *Initial) BootstrapEntries() ([]raftpb.Entry, error) {
	ents := make([]raftpb.Entry, len(in.Members))
	for i, m := range in.Members {
		ctx, err := ConfChangeContext(m)
		if err != nil {
			return nil, err
		}
		cc := raftpb.ConfChange{Type: raftpb.ConfChangeAddNode, NodeID: m.ID, Context: ctx}
		data, err := cc.Marshal()
		if err != nil {
			return nil, fmt.Errorf("encode conf change for member %x: %w", m.ID, err)
		}
		ents[i] = raftpb.Entry{Type: raftpb.EntryConfChange, Term: 1, Index: uint64(i + 1), Data: data}
	}
	return ents, nil
}
