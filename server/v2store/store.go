package v2store

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Namespaces at the top of the tree: the cluster's membership (/0), the v2 API's keys (/1) and
// v2 auth (/2). They and the root cannot be written as keys.
const (
	ClusterPrefix = "/0"
	KeysPrefix    = "/1"
	AuthPrefix    = "/2"
)

// Store is the v2 key tree. Changes come in raft order; reads and watches from any goroutine.
type Store struct {
	mu       sync.RWMutex
	root     *node
	index    uint64
	history  history
	hub      *hub
	expiring expiryHeap
	stats    Stats
	// gets and getFails count reads, which run under the read lock.
	gets, getFails atomic.Uint64
	now            func() time.Time
	readonly       map[string]bool
}

// New is an empty store with the given namespaces as directories. now is the clock that TTLs
// are shown against (expiry itself follows the SYNC times raft carries).
func New(now func() time.Time, namespaces ...string) *Store {
	s := &Store{now: now, hub: newHub(), history: newHistory(), readonly: map[string]bool{"/": true}}
	s.root = &node{Path: "/", Children: map[string]*node{}}
	for _, ns := range namespaces {
		s.root.Children[strings.TrimPrefix(ns, "/")] = &node{Path: ns, Children: map[string]*node{}, parent: s.root}
		s.readonly[ns] = true
	}
	return s
}

// Index is the store's index: the number of changes applied.
func (s *Store) Index() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.index
}

func clean(p string) string { return path.Clean(path.Join("/", p)) }

// lookup is the node at p, or the v2 error for why there is none.
func (s *Store) lookup(p string) (*node, *Error) {
	n := s.root
	for _, seg := range strings.Split(clean(p), "/") {
		if seg == "" {
			continue
		}
		if !n.isDir() {
			return nil, NewError(EcodeNotDir, n.Path, s.index)
		}
		c := n.Children[seg]
		if c == nil {
			return nil, NewError(EcodeKeyNotFound, path.Join(n.Path, seg), s.index)
		}
		n = c
	}
	return n, nil
}

// Get reads p: a directory lists its children (recursive: all below), sorted by key if asked.
func (s *Store) Get(p string, recursive, sorted bool) (*Event, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, err := s.lookup(p)
	if err != nil {
		s.getFails.Add(1)
		return nil, err
	}
	s.gets.Add(1)
	return &Event{Action: ActionGet, Node: n.view(s.now(), recursive, sorted, true), EtcdIndex: s.index}, nil
}

// Expiry is the expiry a write asks for: none (zero), a time, and whether it only refreshes
// the TTL of an existing node, keeping its value and telling no watcher.
type Expiry struct {
	Time    time.Time
	Refresh bool
}

// minExpiry: expiry times before it mean permanent, as upstream's.
var minExpiry = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

func (x Expiry) at() time.Time {
	if x.Time.Before(minExpiry) {
		return time.Time{}
	}
	return x.Time
}

// Create makes p (a directory if dir), with the directories above it; unique appends an
// in-order name (the new index, zero-padded to 20 digits) below p.
func (s *Store) Create(p string, dir bool, value string, unique bool, x Expiry) (*Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.create(p, dir, value, unique, false, x.at(), ActionCreate)
	s.stats.count(opCreate, err == nil)
	if err != nil {
		return nil, err
	}
	s.notify(e)
	return e, nil
}

// Set creates or replaces the value at p (never a directory that exists).
func (s *Store) Set(p string, dir bool, value string, x Expiry) (*Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.set(p, dir, value, x)
	s.stats.count(opSet, err == nil)
	return e, asError(err)
}

func (s *Store) set(p string, dir bool, value string, x Expiry) (*Event, *Error) {
	prev, gerr := s.lookup(p)
	if gerr != nil && gerr.ErrorCode != EcodeKeyNotFound {
		return nil, gerr
	}
	if x.Refresh {
		if gerr != nil {
			return nil, gerr
		}
		value = prev.Value
	}
	var prevView *Node
	if gerr == nil {
		prevView = prev.brief(s.now())
	}
	e, err := s.create(p, dir, value, false, true, x.at(), ActionSet)
	if err != nil {
		return nil, err
	}
	e.PrevNode = prevView
	s.emit(e, x.Refresh)
	return e, nil
}

// create is Create and Set's common part, with the lock held; it tells no watcher.
func (s *Store) create(p string, dir bool, value string, unique, replace bool, expire time.Time, action string) (*Event, *Error) {
	cur, next := s.index, s.index+1
	if unique {
		p += "/" + fmt.Sprintf("%020d", next)
	}
	p = clean(p)
	if s.readonly[p] {
		return nil, NewError(EcodeRootROnly, "/", cur)
	}
	parentPath, name := path.Split(p)
	parent, err := s.mkdirs(parentPath)
	if err != nil {
		err.Index = cur
		return nil, err
	}
	e := &Event{Action: action, Node: &Node{Key: p, ModifiedIndex: next, CreatedIndex: next}}
	if old := parent.Children[name]; old != nil {
		if !replace {
			return nil, NewError(EcodeNodeExist, p, cur)
		}
		if old.isDir() {
			return nil, NewError(EcodeNotFile, p, cur)
		}
		e.PrevNode = old.brief(s.now())
		s.unlink(old, nil)
	}
	n := &node{Path: p, CreatedIndex: next, ModifiedIndex: next, ExpireTime: expire, parent: parent}
	if dir {
		n.Children = map[string]*node{}
		e.Node.Dir = true
	} else {
		n.Value = value
		v := value
		e.Node.Value = &v
	}
	parent.Children[name] = n
	if !n.permanent() {
		heap.Push(&s.expiring, n)
		e.Node.Expiration, e.Node.TTL = n.expiry(s.now())
	}
	s.index = next
	e.EtcdIndex = next
	return e, nil
}

// mkdirs walks to directory p, making missing directories (permanent, at the next index,
// which they do not consume).
func (s *Store) mkdirs(p string) (*node, *Error) {
	n := s.root
	for _, seg := range strings.Split(clean(p), "/") {
		if seg == "" {
			continue
		}
		c := n.Children[seg]
		if c == nil {
			c = &node{Path: path.Join(n.Path, seg), CreatedIndex: s.index + 1, ModifiedIndex: s.index + 1, Children: map[string]*node{}, parent: n}
			n.Children[seg] = c
		} else if !c.isDir() {
			return nil, NewError(EcodeNotDir, c.Path, s.index)
		}
		n = c
	}
	return n, nil
}

// Update changes the value (or only the expiry) of an existing node.
func (s *Store) Update(p string, value string, x Expiry) (*Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.update(p, value, x)
	s.stats.count(opUpdate, err == nil)
	return e, asError(err)
}

func (s *Store) update(p string, value string, x Expiry) (*Event, *Error) {
	p = clean(p)
	if s.readonly[p] {
		return nil, NewError(EcodeRootROnly, "/", s.index)
	}
	n, err := s.lookup(p)
	if err != nil {
		return nil, err
	}
	if n.isDir() && value != "" {
		return nil, NewError(EcodeNotFile, p, s.index)
	}
	if x.Refresh {
		value = n.Value
	}
	next := s.index + 1
	e := &Event{Action: ActionUpdate, Node: &Node{Key: p, ModifiedIndex: next, CreatedIndex: n.CreatedIndex}, PrevNode: n.brief(s.now()), EtcdIndex: next}
	if n.isDir() {
		e.Node.Dir = true
	} else {
		n.Value = value
		v := value
		e.Node.Value = &v
	}
	n.ModifiedIndex = next
	s.setExpiry(n, x.at())
	e.Node.Expiration, e.Node.TTL = n.expiry(s.now())
	s.index = next
	s.emit(e, x.Refresh)
	return e, nil
}

// compareFailure is upstream's cause text for a failed comparison.
func compareFailure(n *node, prevValue string, prevIndex uint64) (string, bool) {
	indexOK := prevIndex == 0 || n.ModifiedIndex == prevIndex
	valueOK := prevValue == "" || n.Value == prevValue
	switch {
	case indexOK && valueOK:
		return "", true
	case indexOK:
		return fmt.Sprintf("[%v != %v]", prevValue, n.Value), false
	case valueOK:
		return fmt.Sprintf("[%v != %v]", prevIndex, n.ModifiedIndex), false
	}
	return fmt.Sprintf("[%v != %v] [%v != %v]", prevValue, n.Value, prevIndex, n.ModifiedIndex), false
}

// CompareAndSwap writes value at p if its value and index are the given ones (empty and 0
// match anything).
func (s *Store) CompareAndSwap(p, prevValue string, prevIndex uint64, value string, x Expiry) (*Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.compareAndSwap(p, prevValue, prevIndex, value, x)
	s.stats.count(opCAS, err == nil)
	return e, asError(err)
}

func (s *Store) compareAndSwap(p, prevValue string, prevIndex uint64, value string, x Expiry) (*Event, *Error) {
	p = clean(p)
	if s.readonly[p] {
		return nil, NewError(EcodeRootROnly, "/", s.index)
	}
	n, err := s.lookup(p)
	if err != nil {
		return nil, err
	}
	if n.isDir() {
		return nil, NewError(EcodeNotFile, p, s.index)
	}
	if cause, ok := compareFailure(n, prevValue, prevIndex); !ok {
		return nil, NewError(EcodeTestFailed, cause, s.index)
	}
	if x.Refresh {
		value = n.Value
	}
	s.index++
	e := &Event{Action: ActionCompareAndSwap, Node: &Node{Key: p, ModifiedIndex: s.index, CreatedIndex: n.CreatedIndex}, PrevNode: n.brief(s.now()), EtcdIndex: s.index}
	n.Value, n.ModifiedIndex = value, s.index
	s.setExpiry(n, x.at())
	v := value
	e.Node.Value = &v
	e.Node.Expiration, e.Node.TTL = n.expiry(s.now())
	s.emit(e, x.Refresh)
	return e, nil
}

// Delete removes p; a directory only with dir (and, when not empty, recursive).
func (s *Store) Delete(p string, dir, recursive bool) (*Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.remove(p, dir, recursive, "", 0, false)
	s.stats.count(opDelete, err == nil)
	return e, asError(err)
}

// CompareAndDelete removes the value at p if its value and index are the given ones.
func (s *Store) CompareAndDelete(p, prevValue string, prevIndex uint64) (*Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.remove(p, false, false, prevValue, prevIndex, true)
	s.stats.count(opCAD, err == nil)
	return e, asError(err)
}

func (s *Store) remove(p string, dir, recursive bool, prevValue string, prevIndex uint64, compare bool) (*Event, *Error) {
	p = clean(p)
	if !compare && s.readonly[p] {
		return nil, NewError(EcodeRootROnly, "/", s.index)
	}
	if recursive {
		dir = true
	}
	n, err := s.lookup(p)
	if err != nil {
		return nil, err
	}
	action := ActionDelete
	if compare {
		action = ActionCompareAndDelete
		if n.isDir() {
			return nil, NewError(EcodeNotFile, p, s.index)
		}
		if cause, ok := compareFailure(n, prevValue, prevIndex); !ok {
			return nil, NewError(EcodeTestFailed, cause, s.index)
		}
	}
	if n.isDir() {
		if !dir {
			return nil, NewError(EcodeNotFile, p, s.index)
		}
		if len(n.Children) > 0 && !recursive {
			return nil, NewError(EcodeDirNotEmpty, p, s.index)
		}
	}
	next := s.index + 1
	e := &Event{Action: action, Node: &Node{Key: p, ModifiedIndex: next, CreatedIndex: n.CreatedIndex, Dir: n.isDir()}, PrevNode: n.brief(s.now()), EtcdIndex: next}
	if compare {
		e.Node.Dir = false
	}
	s.unlink(n, func(gone string) { s.hub.notifyAt(e, gone, true) })
	s.index = next
	s.notify(e)
	return e, nil
}

// unlink takes n and everything below it out of the tree, calling gone for each path removed.
func (s *Store) unlink(n *node, gone func(string)) {
	for _, c := range sortedChildren(n) {
		s.unlink(c, gone)
	}
	if n.parent != nil && n.parent.Children[n.name()] == n {
		delete(n.parent.Children, n.name())
	}
	if gone != nil {
		gone(n.Path)
	}
	if !n.permanent() {
		s.expiring.remove(n)
	}
}

// DeleteExpiredKeys removes every node whose expiry is at or before cutoff (the time of the
// leader's SYNC request), each as an expire event at its own index.
func (s *Store) DeleteExpiredKeys(cutoff time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.expiring.Len() > 0 {
		n := s.expiring.nodes[0]
		if n.ExpireTime.After(cutoff) {
			return
		}
		s.index++
		e := &Event{Action: ActionExpire, Node: &Node{Key: n.Path, ModifiedIndex: s.index, CreatedIndex: n.CreatedIndex, Dir: n.isDir()}, PrevNode: n.brief(s.now()), EtcdIndex: s.index}
		heap.Pop(&s.expiring)
		n.ExpireTime = time.Time{} // out of the heap already
		s.unlink(n, func(gone string) { s.hub.notifyAt(e, gone, true) })
		s.stats.ExpireCount++
		s.notify(e)
	}
}

// HasTTLKeys says whether any node expires (the leader then proposes SYNC requests).
func (s *Store) HasTTLKeys() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.expiring.Len() > 0
}

func (s *Store) setExpiry(n *node, at time.Time) {
	switch {
	case n.permanent() && at.IsZero():
	case n.permanent():
		n.ExpireTime = at
		heap.Push(&s.expiring, n)
	case at.IsZero():
		s.expiring.remove(n)
		n.ExpireTime = at
	default:
		n.ExpireTime = at
		s.expiring.fix(n)
	}
}

// emit records e in the history and, unless it only refreshed a TTL, tells the watchers.
func (s *Store) emit(e *Event, refresh bool) {
	if refresh {
		e.Refresh = true
		s.history.add(e)
		return
	}
	s.notify(e)
}

func (s *Store) notify(e *Event) {
	s.history.add(e)
	s.hub.notify(e)
}

// Watch waits for changes of key (recursive: and below) from index since (0: the next one). A
// change already in the history is delivered at once.
func (s *Store) Watch(key string, recursive, stream bool, since uint64) (*Watcher, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	key = clean(key)
	if since == 0 {
		since = s.index + 1
	}
	e, err := s.history.since(key, recursive, since, s.index)
	if err != nil {
		return nil, err
	}
	w := &Watcher{events: make(chan *Event, 100), stream: stream, recursive: recursive, sinceIndex: since, startIndex: s.index, hub: s.hub}
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	if e != nil {
		// A change already in the history answers the watch, streaming or not (upstream's
		// stream then waits forever; this one ends, and the client watches on from the next index).
		c := e.Clone()
		c.EtcdIndex = s.index
		w.events <- c
		w.removed = true
		close(w.events)
		return w, nil
	}
	s.hub.add(key, w)
	return w, nil
}

// WatcherCount is the number of watchers waiting.
func (s *Store) WatcherCount() int {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.hub.count
}

// asError keeps a nil *Error a nil error.
func asError(err *Error) error {
	if err == nil {
		return nil
	}
	return err
}

func u64(v uint64) string { return strconv.FormatUint(v, 10) }

// document is the snapshot's JSON, with upstream's field names.
type document struct {
	Root           *node
	WatcherHub     struct{ EventHistory history }
	CurrentIndex   uint64
	Stats          Stats
	CurrentVersion int
}

// Save is the store as a raft snapshot carries it.
func (s *Store) Save() ([]byte, error) {
	s.mu.RLock()
	var d document
	d.Root = s.root.clone(nil)
	d.WatcherHub.EventHistory = s.history.clone()
	d.CurrentIndex, d.Stats, d.CurrentVersion = s.index, s.statsLocked(), 2
	s.mu.RUnlock()
	return json.Marshal(&d)
}

// Recover replaces the store's content with a snapshot's document. Watchers end (their
// channels close): what they watched may have changed in ways no event describes.
func (s *Store) Recover(b []byte) error {
	var d document
	if err := json.Unmarshal(b, &d); err != nil {
		return fmt.Errorf("v2 store document: %w", err)
	}
	if d.Root == nil {
		return fmt.Errorf("v2 store document has no root node")
	}
	if d.WatcherHub.EventHistory.Queue.Capacity == 0 {
		d.WatcherHub.EventHistory = newHistory()
	}
	if q := &d.WatcherHub.EventHistory.Queue; len(q.Events) != q.Capacity || q.Front >= q.Capacity || q.Back >= q.Capacity || q.Size > q.Capacity {
		return fmt.Errorf("v2 store document: event history of %d slots, capacity %d", len(q.Events), q.Capacity)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.root, s.index, s.history, s.stats = d.Root, d.CurrentIndex, d.WatcherHub.EventHistory, d.Stats
	s.gets.Store(0)
	s.getFails.Store(0)
	s.expiring = expiryHeap{}
	var relink func(n *node)
	relink = func(n *node) {
		for _, c := range n.Children {
			c.parent = n
			relink(c)
		}
		if !n.permanent() {
			heap.Push(&s.expiring, n)
		}
	}
	relink(s.root)
	s.hub.mu.Lock()
	for _, l := range s.hub.watchers {
		for el := l.Front(); el != nil; {
			next := el.Next()
			el.Value.(*Watcher).drop()
			el = next
		}
	}
	s.hub.mu.Unlock()
	return nil
}

// Stats are the store's counters.
func (s *Store) Stats() Stats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.statsLocked()
}

func (s *Store) statsLocked() Stats {
	st := s.stats
	st.GetSuccess += s.gets.Load()
	st.GetFail += s.getFails.Load()
	st.Watchers = uint64(s.WatcherCount())
	return st
}

// expiryHeap orders the expiring nodes by expiry.
type expiryHeap struct {
	nodes []*node
	at    map[*node]int
}

func (h expiryHeap) Len() int           { return len(h.nodes) }
func (h expiryHeap) Less(i, j int) bool { return h.nodes[i].ExpireTime.Before(h.nodes[j].ExpireTime) }
func (h expiryHeap) Swap(i, j int) {
	h.nodes[i], h.nodes[j] = h.nodes[j], h.nodes[i]
	h.at[h.nodes[i]], h.at[h.nodes[j]] = i, j
}
func (h *expiryHeap) Push(x any) {
	if h.at == nil {
		h.at = map[*node]int{}
	}
	n := x.(*node)
	h.at[n] = len(h.nodes)
	h.nodes = append(h.nodes, n)
}
func (h *expiryHeap) Pop() any {
	n := h.nodes[len(h.nodes)-1]
	h.nodes = h.nodes[:len(h.nodes)-1]
	delete(h.at, n)
	return n
}
func (h *expiryHeap) remove(n *node) {
	if i, ok := h.at[n]; ok {
		heap.Remove(h, i)
	}
}
func (h *expiryHeap) fix(n *node) {
	if i, ok := h.at[n]; ok {
		heap.Fix(h, i)
	} else {
		heap.Push(h, n)
	}
}
