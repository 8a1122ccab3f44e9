package membership

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"etcdx/server/backend"
	"etcdx/server/schema"
)

// Membership is the replicated member list and the IDs removed from it. It changes only while
// applying raft entries (or loading a snapshot); readers get copies.
type Membership struct {
	mu      sync.RWMutex
	cid     uint64
	members map[uint64]*Member
	removed map[uint64]bool
}

// Load reads the membership stored in the backend.
func Load(be *backend.Backend, cid uint64) (*Membership, error) {
	m := &Membership{cid: cid, members: map[uint64]*Member{}, removed: map[uint64]bool{}}
	err := be.View(func(tx *bolt.Tx) error { return m.read(tx) })
	if err != nil {
		return nil, fmt.Errorf("load membership: %w", err)
	}
	return m, nil
}

// Read reads the membership stored in a database file opened by an offline tool.
func Read(db *bolt.DB) (*Membership, error) {
	m := &Membership{members: map[uint64]*Member{}, removed: map[uint64]bool{}}
	if err := db.View(m.read); err != nil {
		return nil, fmt.Errorf("read membership: %w", err)
	}
	return m, nil
}

func (m *Membership) read(tx *bolt.Tx) error {
	if b := tx.Bucket(schema.Members); b != nil {
		if err := b.ForEach(func(k, v []byte) error {
			var mem Member
			if err := json.Unmarshal(v, &mem); err != nil {
				return fmt.Errorf("member %s: %w", k, err)
			}
			m.members[mem.ID] = &mem
			return nil
		}); err != nil {
			return err
		}
	}
	if b := tx.Bucket(schema.MembersRemoved); b != nil {
		return b.ForEach(func(k, _ []byte) error {
			if id, err := schema.ParseMemberKey(k); err == nil {
				m.removed[id] = true
			}
			return nil
		})
	}
	return nil
}

// State is what a raft snapshot records, so a restart can replay later configuration changes
// against the membership as it was at the snapshot.
type State struct {
	Members []Member `json:"members"`
	Removed []uint64 `json:"removed,omitempty"`
}

// State returns the membership as a snapshot records it.
func (m *Membership) State() State {
	m.mu.RLock()
	defer m.mu.RUnlock()
	st := State{}
	for _, mem := range m.members {
		st.Members = append(st.Members, *mem)
	}
	for id := range m.removed {
		st.Removed = append(st.Removed, id)
	}
	sort.Slice(st.Members, func(i, j int) bool { return st.Members[i].ID < st.Members[j].ID })
	return st
}

// FromState is a membership that lives only in memory (for replaying conf changes).
func FromState(st State) *Membership {
	m := &Membership{members: map[uint64]*Member{}, removed: map[uint64]bool{}}
	for i := range st.Members {
		mem := st.Members[i]
		m.members[mem.ID] = &mem
	}
	for _, id := range st.Removed {
		m.removed[id] = true
	}
	return m
}

// record notes a member change in memory only.
func (m *Membership) record(mem *Member, removed bool) {
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

// Save records mem and writes it to the members bucket.
func (m *Membership) Save(w schema.Writer, mem *Member) error {
	v, err := json.Marshal(mem)
	if err != nil {
		return fmt.Errorf("encode member: %w", err)
	}
	m.record(mem, false)
	return w.Put(schema.Members, schema.MemberKey(mem.ID), v)
}

// Remove records the removal of id and moves it to the members_removed bucket.
func (m *Membership) Remove(w schema.Writer, id uint64) error {
	m.record(&Member{ID: id}, true)
	if err := w.Delete(schema.Members, schema.MemberKey(id)); err != nil {
		return err
	}
	return w.Put(schema.MembersRemoved, schema.MemberKey(id), schema.MemberRemovedValue)
}

// Get returns a copy of member id, or nil.
func (m *Membership) Get(id uint64) *Member {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if mem, ok := m.members[id]; ok {
		cp := *mem
		return &cp
	}
	return nil
}

// IsLearner reports whether id is a learner (Get without the copy, for every request).
func (m *Membership) IsLearner(id uint64) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mem, ok := m.members[id]
	return ok && mem.IsLearner
}

// List returns copies of every member, by ID.
func (m *Membership) List() []Member {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]Member, 0, len(m.members))
	for _, mem := range m.members {
		out = append(out, *mem)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Count is the number of members, learners included, without copying them.
func (m *Membership) Count() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.members)
}

// IsRemoved reports whether id was removed from the cluster (it may never come back).
func (m *Membership) IsRemoved(id uint64) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.removed[id]
}

// ClusterID is the cluster's ID.
func (m *Membership) ClusterID() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.cid
}

// LearnerCount is the number of learners.
func (m *Membership) LearnerCount() int {
	n := 0
	for _, mem := range m.List() {
		if mem.IsLearner {
			n++
		}
	}
	return n
}

// Replace takes over another membership's contents (after a snapshot reload).
func (m *Membership) Replace(o *Membership) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.members, m.removed = o.members, o.removed
}

// Rewrite replaces the stored membership with members (restoring a snapshot as a new cluster).
func Rewrite(tx *bolt.Tx, members []Member) error {
	for _, name := range [][]byte{schema.Members, schema.MembersRemoved} {
		if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
			return fmt.Errorf("clear bucket %s: %w", name, err)
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	nm := &Membership{members: map[uint64]*Member{}, removed: map[uint64]bool{}}
	for i := range members {
		if err := nm.Save(schema.TxWriter(tx), &members[i]); err != nil {
			return err
		}
	}
	return nil
}
