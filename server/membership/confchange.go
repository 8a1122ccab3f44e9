package membership

import (
	"encoding/json"
	"errors"
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
)

// Membership errors with upstream's wording.
var (
	ErrMemberNotFound  = errors.New("etcdserver: member not found")
	ErrMemberExist     = errors.New("etcdserver: member ID already exist")
	ErrPeerURLExist    = errors.New("etcdserver: Peer URLs already exists")
	ErrIDRemoved       = errors.New("etcdserver: member ID has been removed")
	ErrNotLearner      = errors.New("etcdserver: can only promote a learner member")
	ErrLearnerNotReady = errors.New("etcdserver: can only promote a learner member which is in sync with leader")
	ErrTooManyLearners = errors.New("etcdserver: too many learner members in cluster")
)

// DefaultMaxLearners is upstream's default for --max-learners.
const DefaultMaxLearners = 1

// DecodeConfChange reads the member a conf change carries in its context, and whether the change
// promotes a learner (upstream's isPromote).
func DecodeConfChange(cc raftpb.ConfChange) (*Member, bool, error) {
	var ctx struct {
		Member
		IsPromote bool `json:"isPromote"`
	}
	if len(cc.Context) > 0 {
		if err := json.Unmarshal(cc.Context, &ctx); err != nil {
			return nil, false, fmt.Errorf("decode member in conf change: %w", err)
		}
	}
	m := ctx.Member
	m.ID = cc.NodeID
	switch cc.Type {
	case raftpb.ConfChangeAddLearnerNode:
		m.IsLearner = true
	case raftpb.ConfChangeAddNode:
		m.IsLearner = false
	}
	return &m, ctx.IsPromote && cc.Type == raftpb.ConfChangeAddNode, nil
}

// PeerURLInUse reports whether another member already has one of urls.
func (m *Membership) PeerURLInUse(urls []string) bool {
	for _, o := range m.List() {
		for _, u := range o.PeerURLs {
			for _, nu := range urls {
				if u == nu {
					return true
				}
			}
		}
	}
	return false
}

// Validate is checked by every member when a conf change applies, so all agree on whether it
// takes effect; maxLearners is --max-learners.
func (m *Membership) Validate(cc raftpb.ConfChange, mem *Member, promote bool, maxLearners int) error {
	existing := m.Get(cc.NodeID)
	if m.IsRemoved(cc.NodeID) {
		return ErrIDRemoved
	}
	switch cc.Type {
	case raftpb.ConfChangeAddNode, raftpb.ConfChangeAddLearnerNode:
		if promote {
			if existing == nil {
				return ErrMemberNotFound
			}
			if !existing.IsLearner {
				return ErrNotLearner
			}
			return nil
		}
		if existing != nil {
			return ErrMemberExist
		}
		// Checked again here because two adds sent to different members can both pass the
		// proposer's check; the applied order decides which one is too many.
		if cc.Type == raftpb.ConfChangeAddLearnerNode && m.LearnerCount() >= maxLearners {
			return ErrTooManyLearners
		}
		if m.PeerURLInUse(mem.PeerURLs) {
			return ErrPeerURLExist
		}
	case raftpb.ConfChangeRemoveNode, raftpb.ConfChangeUpdateNode:
		if existing == nil {
			return ErrMemberNotFound
		}
	}
	return nil
}

// Apply computes the member record a valid change leaves behind and records it in memory. It
// returns the record and whether the member was removed; the caller persists it.
func (m *Membership) Apply(cc raftpb.ConfChange, mem *Member) (*Member, bool) {
	if cc.Type == raftpb.ConfChangeRemoveNode {
		m.record(mem, true)
		return mem, true
	}
	if old := m.Get(mem.ID); old != nil {
		// Promotion or URL update keeps the published name and client URLs (and a promotion,
		// whose context may carry only the ID, the peer URLs).
		if len(mem.PeerURLs) == 0 {
			mem.PeerURLs = old.PeerURLs
		}
		if mem.Name == "" {
			mem.Name = old.Name
		}
		if len(mem.ClientURLs) == 0 {
			mem.ClientURLs = old.ClientURLs
		}
		if cc.Type == raftpb.ConfChangeUpdateNode {
			mem.IsLearner = old.IsLearner
		}
	}
	m.record(mem, false)
	return mem, false
}
