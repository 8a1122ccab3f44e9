package etcdserver

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"

	bolt "go.etcd.io/bbolt"

	"etcdx/server/backend"
)

// Member is stored as JSON in the members bucket, keyed by the hex ID, as upstream stores it.
type Member struct {
	ID         uint64   `json:"id"`
	PeerURLs   []string `json:"peerURLs"`
	IsLearner  bool     `json:"isLearner,omitempty"`
	Name       string   `json:"name,omitempty"`
	ClientURLs []string `json:"clientURLs,omitempty"`
	// ServerVersion is the version the member last published; upstream keeps no such field and
	// ignores it when reading our files.
	ServerVersion string `json:"serverVersion,omitempty"`
}

// MemberKey is the members bucket key: the ID in hex, as upstream.
func MemberKey(id uint64) []byte { return []byte(strconv.FormatUint(id, 16)) }

// membership is the replicated member list; changes come only from applied raft entries.
type membership struct {
	mu      sync.RWMutex
	cid     uint64
	members map[uint64]*Member
	removed map[uint64]bool
}

func loadMembership(be *backend.Backend, cid uint64) (*membership, error) {
	m := &membership{cid: cid, members: map[uint64]*Member{}, removed: map[uint64]bool{}}
	err := be.View(func(tx *bolt.Tx) error {
		if err := tx.Bucket(backend.Members).ForEach(func(k, v []byte) error {
			var mem Member
			if err := json.Unmarshal(v, &mem); err != nil {
				return fmt.Errorf("member %s: %w", k, err)
			}
			m.members[mem.ID] = &mem
			return nil
		}); err != nil {
			return err
		}
		return tx.Bucket(backend.MembersRemoved).ForEach(func(k, _ []byte) error {
			id, err := strconv.ParseUint(string(k), 16, 64)
			if err == nil {
				m.removed[id] = true
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("load membership: %w", err)
	}
	return m, nil
}

// membershipState is what a raft snapshot records, so a restart can replay later configuration
// changes against the membership as it was at the snapshot.
type membershipState struct {
	Members []Member `json:"members"`
	Removed []uint64 `json:"removed,omitempty"`
}

func (m *membership) state() membershipState {
	m.mu.RLock()
	defer m.mu.RUnlock()
	st := membershipState{}
	for _, mem := range m.members {
		st.Members = append(st.Members, *mem)
	}
	for id := range m.removed {
		st.Removed = append(st.Removed, id)
	}
	sort.Slice(st.Members, func(i, j int) bool { return st.Members[i].ID < st.Members[j].ID })
	return st
}

// memoryMembership is a membership that lives only in memory (for replay).
func memoryMembership(st membershipState) *membership {
	m := &membership{members: map[uint64]*Member{}, removed: map[uint64]bool{}}
	for i := range st.Members {
		mem := st.Members[i]
		m.members[mem.ID] = &mem
	}
	for _, id := range st.Removed {
		m.removed[id] = true
	}
	return m
}

// applyInMemory records a member change without persisting it.
func (m *membership) applyInMemory(mem *Member, removed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if removed {
		delete(m.members, mem.ID)
		m.removed[mem.ID] = true
		return
	}
	cp := *mem
	m.members[mem.ID] = &cp
}

func (m *membership) save(b *backend.BatchTx, mem *Member) error {
	v, err := json.Marshal(mem)
	if err != nil {
		return fmt.Errorf("encode member: %w", err)
	}
	m.mu.Lock()
	cp := *mem
	m.members[mem.ID] = &cp
	m.mu.Unlock()
	return b.Put(backend.Members, MemberKey(mem.ID), v)
}

func (m *membership) remove(b *backend.BatchTx, id uint64) error {
	m.mu.Lock()
	delete(m.members, id)
	m.removed[id] = true
	m.mu.Unlock()
	if err := b.Delete(backend.Members, MemberKey(id)); err != nil {
		return err
	}
	return b.Put(backend.MembersRemoved, MemberKey(id), []byte("removed"))
}

func (m *membership) get(id uint64) *Member {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if mem, ok := m.members[id]; ok {
		cp := *mem
		return &cp
	}
	return nil
}

func (m *membership) list() []Member {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]Member, 0, len(m.members))
	for _, mem := range m.members {
		out = append(out, *mem)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (m *membership) isRemoved(id uint64) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.removed[id]
}

func (m *membership) clusterID() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.cid
}

// replace takes over another membership's contents (after a snapshot reload).
func (m *membership) replace(o *membership) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.members, m.removed = o.members, o.removed
}
