package membership

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"etcdx/server/v2store"
)

// Raft snapshots carry the v2 store as a JSON document, as upstream writes it: upstream 3.5
// recovers its membership and cluster version from it, and 3.6 still writes it for a rollback
// to 3.5. Only the cluster namespace (/0) holds anything:
//
//	/0/members/<id hex>/raftAttributes   {"peerURLs":[...],"isLearner":true}
//	/0/members/<id hex>/attributes       {"name":"...","clientURLs":[...]}
//	/0/removed_members/<id hex>          ""
//	/0/version                           "3.6.0"
//
// The keys namespace (/1) is an empty directory; upstream 3.6 refuses a document with v2 keys.

// v2Node is one node of the document, with upstream's field names. A directory has a non-nil
// Children map; a value has none.
type v2Node struct {
	Path          string
	CreatedIndex  uint64
	ModifiedIndex uint64
	ExpireTime    time.Time
	Value         string
	Children      map[string]*v2Node
}

// v2Doc is the document's top level. The watcher hub's event queue is written with its full
// capacity of empty slots, as upstream's is: upstream inserts into it by position.
type v2Doc struct {
	Root           *v2Node
	WatcherHub     v2WatcherHub
	CurrentIndex   uint64
	Stats          v2store.Stats
	CurrentVersion int
}

type v2WatcherHub struct {
	EventHistory v2EventHistory
}

type v2EventHistory struct {
	Queue      v2EventQueue
	StartIndex uint64
	LastIndex  uint64
}

type v2EventQueue struct {
	Events   []*json.RawMessage
	Size     int
	Front    int
	Back     int
	Capacity int
}

const v2HistoryCapacity = 1000

type v2RaftAttributes struct {
	PeerURLs  []string `json:"peerURLs"`
	IsLearner bool     `json:"isLearner,omitempty"`
}

type v2Attributes struct {
	Name       string   `json:"name,omitempty"`
	ClientURLs []string `json:"clientURLs,omitempty"`
}

// V2RaftAttributesValue is the value upstream 3.5 keeps at /0/members/<id>/raftAttributes.
func V2RaftAttributesValue(m Member) (string, error) {
	b, err := json.Marshal(v2RaftAttributes{PeerURLs: nonNil(m.PeerURLs), IsLearner: m.IsLearner})
	return string(b), err
}

// V2AttributesValue is the value upstream 3.5 keeps at /0/members/<id>/attributes.
func V2AttributesValue(m Member) (string, error) {
	b, err := json.Marshal(v2Attributes{Name: m.Name, ClientURLs: m.ClientURLs})
	return string(b), err
}

// V2MemberKey is the directory of member id in the v2 store; V2RemovedKey marks it removed.
func V2MemberKey(id uint64) string  { return "/0/members/" + strconv.FormatUint(id, 16) }
func V2RemovedKey(id uint64) string { return "/0/removed_members/" + strconv.FormatUint(id, 16) }

// V2ClusterVersionKey is where the v2 store keeps the cluster version.
const V2ClusterVersionKey = v2ClusterVersionKey

// EncodeV2Store renders the membership and cluster version (empty: not decided yet) as the
// v2-store document of a raft snapshot.
func EncodeV2Store(st State, clusterVersion string) ([]byte, error) {
	var index uint64
	node := func(path, value string, dir bool) *v2Node {
		index++
		n := &v2Node{Path: path, CreatedIndex: index, ModifiedIndex: index, Value: value}
		if dir {
			n.Children = map[string]*v2Node{}
		}
		return n
	}
	root := &v2Node{Path: "/", Children: map[string]*v2Node{}}
	cluster := &v2Node{Path: "/0", Children: map[string]*v2Node{}}
	root.Children["0"] = cluster
	root.Children["1"] = &v2Node{Path: "/1", Children: map[string]*v2Node{}}
	members := node("/0/members", "", true)
	cluster.Children["members"] = members
	sorted := append([]Member(nil), st.Members...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	for _, m := range sorted {
		id := strconv.FormatUint(m.ID, 16)
		dir := node("/0/members/"+id, "", true)
		members.Children[id] = dir
		ra, err := json.Marshal(v2RaftAttributes{PeerURLs: nonNil(m.PeerURLs), IsLearner: m.IsLearner})
		if err != nil {
			return nil, fmt.Errorf("encode raft attributes of member %s: %w", id, err)
		}
		dir.Children["raftAttributes"] = node(dir.Path+"/raftAttributes", string(ra), false)
		if m.Started() {
			a, err := json.Marshal(v2Attributes{Name: m.Name, ClientURLs: m.ClientURLs})
			if err != nil {
				return nil, fmt.Errorf("encode attributes of member %s: %w", id, err)
			}
			dir.Children["attributes"] = node(dir.Path+"/attributes", string(a), false)
		}
	}
	if len(st.Removed) > 0 {
		removed := node("/0/removed_members", "", true)
		cluster.Children["removed_members"] = removed
		ids := append([]uint64(nil), st.Removed...)
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, r := range ids {
			id := strconv.FormatUint(r, 16)
			removed.Children[id] = node(removed.Path+"/"+id, "", false)
		}
	}
	if clusterVersion != "" {
		cluster.Children["version"] = node("/0/version", clusterVersion, false)
	}
	doc := v2Doc{Root: root, CurrentIndex: index, CurrentVersion: 2}
	doc.WatcherHub.EventHistory.Queue = v2EventQueue{Events: make([]*json.RawMessage, v2HistoryCapacity), Capacity: v2HistoryCapacity}
	return json.Marshal(doc)
}

// DecodeV2Store reads the membership and cluster version from a snapshot's v2-store document.
func DecodeV2Store(b []byte) (State, string, error) {
	var st State
	var doc struct{ Root *v2Node }
	if err := json.Unmarshal(b, &doc); err != nil {
		return st, "", fmt.Errorf("v2 store document: %w", err)
	}
	if doc.Root == nil {
		return st, "", fmt.Errorf("v2 store document has no root node")
	}
	cluster := doc.Root.Children["0"]
	if cluster == nil {
		return st, "", nil
	}
	if members := cluster.Children["members"]; members != nil {
		for key, dir := range members.Children {
			id, err := strconv.ParseUint(key, 16, 64)
			if err != nil {
				return st, "", fmt.Errorf("v2 store: member key %q: %w", key, err)
			}
			m := Member{ID: id}
			for name, n := range dir.Children {
				switch name {
				case "raftAttributes":
					var ra v2RaftAttributes
					if err := json.Unmarshal([]byte(n.Value), &ra); err != nil {
						return st, "", fmt.Errorf("v2 store: raft attributes of member %s: %w", key, err)
					}
					m.PeerURLs, m.IsLearner = ra.PeerURLs, ra.IsLearner
				case "attributes":
					var a v2Attributes
					if err := json.Unmarshal([]byte(n.Value), &a); err != nil {
						return st, "", fmt.Errorf("v2 store: attributes of member %s: %w", key, err)
					}
					m.Name, m.ClientURLs = a.Name, a.ClientURLs
				default:
					return st, "", fmt.Errorf("v2 store: unknown key %q under member %s", name, key)
				}
			}
			if m.PeerURLs == nil {
				return st, "", fmt.Errorf("v2 store: member %s has no raft attributes", key)
			}
			st.Members = append(st.Members, m)
		}
	}
	if removed := cluster.Children["removed_members"]; removed != nil {
		for key := range removed.Children {
			id, err := strconv.ParseUint(key, 16, 64)
			if err != nil {
				return st, "", fmt.Errorf("v2 store: removed member key %q: %w", key, err)
			}
			st.Removed = append(st.Removed, id)
		}
	}
	sort.Slice(st.Members, func(i, j int) bool { return st.Members[i].ID < st.Members[j].ID })
	sort.Slice(st.Removed, func(i, j int) bool { return st.Removed[i] < st.Removed[j] })
	var version string
	if v := cluster.Children["version"]; v != nil {
		version = v.Value
	}
	return st, version, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// V2StoreHasCustomContent says whether a v2 store document holds anything besides the
// membership and cluster version under /0, as upstream 3.5's check counts it (upstream 3.6
// refuses to start on such a store): a key under /1 (the namespace itself, empty, is none), or a
// user or role under /2 (the empty /2/users and /2/roles v2 auth leaves behind, and /2/enabled,
// are none).
func V2StoreHasCustomContent(b []byte) (bool, error) {
	var doc struct{ Root *v2Node }
	if err := json.Unmarshal(b, &doc); err != nil {
		return false, fmt.Errorf("v2 store document: %w", err)
	}
	if doc.Root == nil {
		return false, fmt.Errorf("v2 store document has no root node")
	}
	for key, n := range doc.Root.Children {
		switch key {
		case "0":
		case "2":
			for _, d := range n.Children {
				if len(d.Children) > 0 {
					return true, nil
				}
			}
		default:
			if len(n.Children) > 0 {
				return true, nil
			}
		}
	}
	return false, nil
}
