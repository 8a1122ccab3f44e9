package v2store

import (
	"container/list"
	"path"
	"strings"
	"sync"
)

// Watcher receives the changes it asked for on EventChan. A watcher that is not streaming gets
// one event; a watcher too slow to take its events (100 buffered) is dropped, its channel
// closed. Remove it when done.
type Watcher struct {
	events     chan *Event
	stream     bool
	recursive  bool
	sinceIndex uint64
	startIndex uint64
	hub        *hub
	removed    bool
	unlink     func()
}

// EventChan delivers the events; it is closed when the watcher is removed.
func (w *Watcher) EventChan() <-chan *Event { return w.events }

// StartIndex is the store's index when the watch began.
func (w *Watcher) StartIndex() uint64 { return w.startIndex }

// Remove stops the watcher and closes its channel.
func (w *Watcher) Remove() {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	w.drop()
}

// drop is called with the hub's lock held.
func (w *Watcher) drop() {
	if w.removed {
		return
	}
	w.removed = true
	if w.unlink != nil {
		w.unlink()
	}
	close(w.events)
}

// offer hands e to the watcher if it wants it; true when it did (so a one-shot watcher ends).
func (w *Watcher) offer(e *Event, exact, deleted bool) bool {
	if !(w.recursive || exact || deleted) || e.Index() < w.sinceIndex {
		return false
	}
	select {
	case w.events <- e:
	default:
		w.drop() // too slow: upstream drops it too
	}
	return true
}

// hub holds the watchers by the key they watch.
type hub struct {
	mu       sync.Mutex
	watchers map[string]*list.List
	count    int
}

func newHub() *hub { return &hub{watchers: map[string]*list.List{}} }

func (h *hub) add(key string, w *Watcher) {
	l := h.watchers[key]
	if l == nil {
		l = list.New()
		h.watchers[key] = l
	}
	el := l.PushBack(w)
	h.count++
	w.unlink = func() {
		l.Remove(el)
		h.count--
		if l.Len() == 0 && h.watchers[key] == l {
			delete(h.watchers, key)
		}
	}
}

// notify tells the watchers of the changed key and of every directory above it.
func (h *hub) notify(e *Event) {
	p := "/"
	h.notifyAt(e, p, false)
	for _, seg := range strings.Split(e.Node.Key, "/") {
		if seg == "" {
			continue
		}
		p = path.Join(p, seg)
		h.notifyAt(e, p, false)
	}
}

// notifyAt tells the watchers of key p; deleted: p itself went with a removed directory.
func (h *hub) notifyAt(e *Event, p string, deleted bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.watchers[p]
	if l == nil {
		return
	}
	exact := e.Node.Key == p
	for el := l.Front(); el != nil; {
		next := el.Next()
		w := el.Value.(*Watcher)
		if (exact || !hiddenBelow(p, e.Node.Key)) && w.offer(e, exact, deleted) && !w.stream && !w.removed {
			w.removed = true
			w.unlink()
			close(w.events)
		}
		el = next
	}
}

// hiddenBelow says whether key is hidden from a watcher of watched: a path element after
// watched starts with '_'.
func hiddenBelow(watched, key string) bool {
	if len(watched) > len(key) {
		return false
	}
	return strings.Contains(path.Clean("/"+key[len(watched):]), "/_")
}
