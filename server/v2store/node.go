package v2store

import (
	"path"
	"sort"
	"time"
)

// node is a directory (Children non-nil) or a value. Its exported fields are the snapshot
// document's, with upstream's names.
type node struct {
	Path          string
	CreatedIndex  uint64
	ModifiedIndex uint64
	ExpireTime    time.Time
	Value         string
	Children      map[string]*node

	parent *node
}

func (n *node) isDir() bool     { return n.Children != nil }
func (n *node) permanent() bool { return n.ExpireTime.IsZero() }
func (n *node) name() string    { return path.Base(n.Path) }
func (n *node) hidden() bool    { return len(n.name()) > 0 && n.name()[0] == '_' }

func sortedChildren(n *node) []*node {
	out := make([]*node, 0, len(n.Children))
	for _, c := range n.Children {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Node is a node as the API shows it (upstream's NodeExtern).
type Node struct {
	Key           string     `json:"key,omitempty"`
	Value         *string    `json:"value,omitempty"`
	Dir           bool       `json:"dir,omitempty"`
	Expiration    *time.Time `json:"expiration,omitempty"`
	TTL           int64      `json:"ttl,omitempty"`
	Nodes         []*Node    `json:"nodes,omitempty"`
	ModifiedIndex uint64     `json:"modifiedIndex,omitempty"`
	CreatedIndex  uint64     `json:"createdIndex,omitempty"`
}

func (n *Node) clone() *Node {
	if n == nil {
		return nil
	}
	c := *n
	if n.Value != nil {
		v := *n.Value
		c.Value = &v
	}
	if n.Expiration != nil {
		t := *n.Expiration
		c.Expiration = &t
	}
	if n.Nodes != nil {
		c.Nodes = make([]*Node, len(n.Nodes))
		for i, ch := range n.Nodes {
			c.Nodes[i] = ch.clone()
		}
	}
	return &c
}

// expiry is the node's expiration and its TTL in whole seconds rounded up, as of now.
func (n *node) expiry(now time.Time) (*time.Time, int64) {
	if n.permanent() {
		return nil, 0
	}
	left := n.ExpireTime.Sub(now)
	ttl := int64(left / time.Second)
	if left%time.Second > 0 {
		ttl++
	}
	t := n.ExpireTime.UTC()
	return &t, ttl
}

// view is n as the API shows it: a directory lists its children (not hidden ones) when
// recursive or top, their children only when recursive; sorted orders each list by key.
func (n *node) view(now time.Time, recursive, sorted, top bool) *Node {
	out := &Node{Key: n.Path, ModifiedIndex: n.ModifiedIndex, CreatedIndex: n.CreatedIndex}
	out.Expiration, out.TTL = n.expiry(now)
	if !n.isDir() {
		v := n.Value
		out.Value = &v
		return out
	}
	out.Dir = true
	if !recursive && !top {
		return out
	}
	out.Nodes = []*Node{}
	for _, c := range n.Children {
		if c.hidden() {
			continue
		}
		out.Nodes = append(out.Nodes, c.view(now, recursive, sorted, false))
	}
	if sorted {
		sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Key < out.Nodes[j].Key })
	}
	if len(out.Nodes) == 0 && !top {
		out.Nodes = nil
	}
	return out
}

// brief is n without its children, as events show previous nodes.
func (n *node) brief(now time.Time) *Node { return n.view(now, false, false, false) }

// clone copies the subtree (parent links inside it rebuilt).
func (n *node) clone(parent *node) *node {
	c := &node{Path: n.Path, CreatedIndex: n.CreatedIndex, ModifiedIndex: n.ModifiedIndex, ExpireTime: n.ExpireTime, Value: n.Value, parent: parent}
	if n.isDir() {
		c.Children = make(map[string]*node, len(n.Children))
		for k, ch := range n.Children {
			c.Children[k] = ch.clone(c)
		}
	}
	return c
}
