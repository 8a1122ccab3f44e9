package v2store

import (
	"path"
	"strings"
)

// Actions events carry.
const (
	ActionGet              = "get"
	ActionCreate           = "create"
	ActionSet              = "set"
	ActionUpdate           = "update"
	ActionDelete           = "delete"
	ActionCompareAndSwap   = "compareAndSwap"
	ActionCompareAndDelete = "compareAndDelete"
	ActionExpire           = "expire"
)

// Event is the result of an operation, and what watchers receive.
type Event struct {
	Action   string `json:"action"`
	Node     *Node  `json:"node,omitempty"`
	PrevNode *Node  `json:"prevNode,omitempty"`
	// EtcdIndex is the store's index when the event was answered (the X-Etcd-Index header).
	EtcdIndex uint64 `json:"-"`
	// Refresh marks a TTL refresh: kept in the history, not sent to watchers.
	Refresh bool `json:"refresh,omitempty"`
}

// IsCreated says whether the operation created the node (HTTP 201).
func (e *Event) IsCreated() bool {
	return e.Action == ActionCreate || e.Action == ActionSet && e.PrevNode == nil
}

// Index is the index of the change.
func (e *Event) Index() uint64 { return e.Node.ModifiedIndex }

// Clone is a deep copy of e (events are shared with the history and every watcher).
func (e *Event) Clone() *Event {
	c := *e
	c.Node, c.PrevNode = e.Node.clone(), e.PrevNode.clone()
	return &c
}

// matches says whether a watcher on key (recursive: and below) sees e: a change of key or
// below it, or the deletion or expiry of a directory above it.
func (e *Event) matches(key string, recursive bool) bool {
	if e.Node.Key == key {
		return true
	}
	if recursive {
		prefix := path.Clean(key)
		if !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		if strings.HasPrefix(e.Node.Key, prefix) {
			return true
		}
	}
	return (e.Action == ActionDelete || e.Action == ActionExpire) && e.PrevNode != nil && e.PrevNode.Dir &&
		strings.HasPrefix(key, e.PrevNode.Key)
}

// history is the ring of the last changes, oldest at front (the snapshot document keeps it
// with upstream's field names).
type history struct {
	Queue      ring
	StartIndex uint64
	LastIndex  uint64
}

type ring struct {
	Events   []*Event
	Size     int
	Front    int
	Back     int
	Capacity int
}

const historyCapacity = 1000

func newHistory() history {
	return history{Queue: ring{Events: make([]*Event, historyCapacity), Capacity: historyCapacity}}
}

func (h *history) add(e *Event) {
	q := &h.Queue
	q.Events[q.Back] = e
	q.Back = (q.Back + 1) % q.Capacity
	if q.Size == q.Capacity {
		q.Front = (q.Front + 1) % q.Capacity
	} else {
		q.Size++
	}
	h.LastIndex = e.Index()
	h.StartIndex = q.Events[q.Front].Index()
}

// since is the first change at or after index that a watcher on key sees; nil when none yet.
func (h *history) since(key string, recursive bool, index, storeIndex uint64) (*Event, *Error) {
	if index < h.StartIndex {
		return nil, NewError(EcodeIndexCleared, "the requested history has been cleared ["+u64(h.StartIndex)+"/"+u64(index)+"]", storeIndex)
	}
	if index > h.LastIndex || h.Queue.Size == 0 {
		return nil, nil
	}
	q := &h.Queue
	i := (q.Front + int(index-h.StartIndex)) % q.Capacity
	for {
		if e := q.Events[i]; e != nil && !e.Refresh && e.matches(key, recursive) {
			return e, nil
		}
		i = (i + 1) % q.Capacity
		if i == q.Back {
			return nil, nil
		}
	}
}

func (h *history) clone() history {
	c := *h
	c.Queue.Events = append([]*Event(nil), h.Queue.Events...)
	return c
}
