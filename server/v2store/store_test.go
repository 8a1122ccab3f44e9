package v2store

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// clock is a stepped clock for the tests.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestStore() (*Store, *clock) {
	c := &clock{t: t0}
	return New(c.now, ClusterPrefix, KeysPrefix), c
}

func code(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.ErrorCode
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestOperations(t *testing.T) {
	s, _ := newTestStore()
	steps := []struct {
		name   string
		do     func() (*Event, error)
		code   int
		action string
		index  uint64 // the event's modified index
		prev   string // the previous node's value, "" for none
	}{
		{"create", func() (*Event, error) { return s.Create("/1/a", false, "1", false, Expiry{}) }, 0, ActionCreate, 1, ""},
		{"create again", func() (*Event, error) { return s.Create("/1/a", false, "2", false, Expiry{}) }, EcodeNodeExist, "", 0, ""},
		{"set replaces", func() (*Event, error) { return s.Set("/1/a", false, "2", Expiry{}) }, 0, ActionSet, 2, "1"},
		{"set under a value", func() (*Event, error) { return s.Set("/1/a/b", false, "x", Expiry{}) }, EcodeNotDir, "", 0, ""},
		{"set makes dirs", func() (*Event, error) { return s.Set("/1/d/e/f", false, "x", Expiry{}) }, 0, ActionSet, 3, ""},
		{"set over a dir", func() (*Event, error) { return s.Set("/1/d", false, "x", Expiry{}) }, EcodeNotFile, "", 0, ""},
		{"update", func() (*Event, error) { return s.Update("/1/a", "3", Expiry{}) }, 0, ActionUpdate, 4, "2"},
		{"update missing", func() (*Event, error) { return s.Update("/1/nope", "3", Expiry{}) }, EcodeKeyNotFound, "", 0, ""},
		{"cas value mismatch", func() (*Event, error) { return s.CompareAndSwap("/1/a", "9", 0, "4", Expiry{}) }, EcodeTestFailed, "", 0, ""},
		{"cas index mismatch", func() (*Event, error) { return s.CompareAndSwap("/1/a", "", 1, "4", Expiry{}) }, EcodeTestFailed, "", 0, ""},
		{"cas", func() (*Event, error) { return s.CompareAndSwap("/1/a", "3", 4, "4", Expiry{}) }, 0, ActionCompareAndSwap, 5, "3"},
		{"cas on dir", func() (*Event, error) { return s.CompareAndSwap("/1/d", "", 0, "4", Expiry{}) }, EcodeNotFile, "", 0, ""},
		{"delete dir without dir", func() (*Event, error) { return s.Delete("/1/d", false, false) }, EcodeNotFile, "", 0, ""},
		{"delete non-empty dir", func() (*Event, error) { return s.Delete("/1/d", true, false) }, EcodeDirNotEmpty, "", 0, ""},
		{"delete recursive", func() (*Event, error) { return s.Delete("/1/d", false, true) }, 0, ActionDelete, 6, ""},
		{"cad mismatch", func() (*Event, error) { return s.CompareAndDelete("/1/a", "x", 0) }, EcodeTestFailed, "", 0, ""},
		{"cad", func() (*Event, error) { return s.CompareAndDelete("/1/a", "4", 5) }, 0, ActionCompareAndDelete, 7, "4"},
		{"root is read only", func() (*Event, error) { return s.Set("/1", false, "x", Expiry{}) }, EcodeRootROnly, "", 0, ""},
		{"in-order key", func() (*Event, error) { return s.Create("/1/q", false, "job", true, Expiry{}) }, 0, ActionCreate, 8, ""},
	}
	for _, st := range steps {
		e, err := st.do()
		if code(err) != st.code {
			t.Fatalf("%s: error %v, want code %d", st.name, err, st.code)
		}
		if err != nil {
			if e != nil {
				t.Fatalf("%s: an event with an error", st.name)
			}
			continue
		}
		if e.Action != st.action || e.Index() != st.index || e.EtcdIndex != st.index {
			t.Fatalf("%s: event %s at %d (etcd index %d), want %s at %d", st.name, e.Action, e.Index(), e.EtcdIndex, st.action, st.index)
		}
		var prev string
		if e.PrevNode != nil && e.PrevNode.Value != nil {
			prev = *e.PrevNode.Value
		}
		if prev != st.prev {
			t.Fatalf("%s: previous value %q, want %q", st.name, prev, st.prev)
		}
	}
	if s.Index() != 8 {
		t.Fatalf("index %d after 8 changes", s.Index())
	}
	e, err := s.Get("/1/q", true, true)
	if err != nil || len(e.Node.Nodes) != 1 || e.Node.Nodes[0].Key != "/1/q/00000000000000000008" {
		t.Fatalf("in-order key: %+v %v", e, err)
	}
	var serr *Error
	_, err = s.Get("/1/a", false, false)
	if !errors.As(err, &serr) || serr.StatusCode() != 404 || serr.Cause != "/1/a" || serr.Index != 8 || serr.Message != "Key not found" {
		t.Fatalf("get of a deleted key: %+v", err)
	}
}

func TestGetListsAndHides(t *testing.T) {
	s, _ := newTestStore()
	for _, k := range []string{"/1/d/b", "/1/d/a", "/1/d/_hidden", "/1/d/sub/x"} {
		if _, err := s.Set(k, false, "v", Expiry{}); err != nil {
			t.Fatal(err)
		}
	}
	e, err := s.Get("/1/d", false, true)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, n := range e.Node.Nodes {
		keys = append(keys, n.Key)
		if n.Key == "/1/d/sub" && (n.Nodes != nil || !n.Dir) {
			t.Errorf("a sub-directory of a listing that is not recursive: %+v", n)
		}
	}
	if want := []string{"/1/d/a", "/1/d/b", "/1/d/sub"}; !equal(keys, want) {
		t.Fatalf("listing %v, want %v (sorted, no hidden node)", keys, want)
	}
	e, _ = s.Get("/1/d", true, true)
	if sub := e.Node.Nodes[2]; len(sub.Nodes) != 1 || *sub.Nodes[0].Value != "v" {
		t.Fatalf("recursive listing: %+v", sub)
	}
	if e, _ := s.Get("/1/d/_hidden", false, false); *e.Node.Value != "v" {
		t.Fatal("a hidden node read by its own key")
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestTTLAndExpiry(t *testing.T) {
	s, c := newTestStore()
	e, err := s.Set("/1/t", false, "v", Expiry{Time: t0.Add(10 * time.Second)})
	if err != nil || e.Node.TTL != 10 || !e.Node.Expiration.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("set with TTL: %+v %v", e.Node, err)
	}
	c.t = t0.Add(2500 * time.Millisecond)
	if e, _ := s.Get("/1/t", false, false); e.Node.TTL != 8 {
		t.Fatalf("TTL after 2.5 s: %d, want 8 (rounded up)", e.Node.TTL)
	}
	w, err := s.Watch("/1/t", false, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A refresh keeps the value, moves the expiry and tells no watcher.
	if _, err := s.Update("/1/t", "", Expiry{Time: t0.Add(20 * time.Second), Refresh: true}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.EventChan():
		t.Fatalf("a refresh reached a watcher: %+v", ev)
	default:
	}
	s.DeleteExpiredKeys(t0.Add(15 * time.Second))
	if _, err := s.Get("/1/t", false, false); err != nil {
		t.Fatalf("expired before its refreshed expiry: %v", err)
	}
	if !s.HasTTLKeys() {
		t.Fatal("no TTL key")
	}
	s.DeleteExpiredKeys(t0.Add(20 * time.Second))
	ev := <-w.EventChan()
	if ev.Action != ActionExpire || *ev.PrevNode.Value != "v" || s.HasTTLKeys() {
		t.Fatalf("expiry event %+v, TTL keys left %v", ev, s.HasTTLKeys())
	}
	// Permanent again: an update without TTL clears it.
	s.Set("/1/p", false, "v", Expiry{Time: t0.Add(time.Hour)})
	s.Update("/1/p", "w", Expiry{})
	if s.HasTTLKeys() {
		t.Fatal("an update without TTL left the expiry")
	}
}

func TestWatchers(t *testing.T) {
	s, _ := newTestStore()
	one, _ := s.Watch("/1/dir", false, false, 0)
	rec, _ := s.Watch("/1/dir", true, true, 0)
	s.Set("/1/dir/a", false, "1", Expiry{})
	s.Set("/1/dir/_h", false, "1", Expiry{})
	s.Set("/1/dir/b", false, "2", Expiry{})
	s.Delete("/1/dir", true, true)
	if got := keysOf(rec.EventChan(), 3); !equal(got, []string{"set /1/dir/a", "set /1/dir/b", "delete /1/dir"}) {
		t.Fatalf("recursive stream watcher saw %v", got)
	}
	// The one-shot watcher on the directory itself sees only the directory's deletion.
	if got := keysOf(one.EventChan(), 2); !equal(got, []string{"delete /1/dir"}) {
		t.Fatalf("one-shot watcher saw %v", got)
	}
	// From an index in the history: delivered at once.
	w, err := s.Watch("/1/dir/b", false, false, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(w.EventChan(), 2); !equal(got, []string{"set /1/dir/b"}) {
		t.Fatalf("watch from index 2 saw %v", got)
	}
	rec.Remove()
	if s.WatcherCount() != 0 {
		t.Fatalf("%d watchers left", s.WatcherCount())
	}
}

// keysOf takes up to n events until the channel closes or stays empty.
func keysOf(ch <-chan *Event, n int) []string {
	var out []string
	for len(out) < n {
		select {
		case e, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, e.Action+" "+e.Node.Key)
		case <-time.After(50 * time.Millisecond):
			return out
		}
	}
	return out
}

func TestHistoryCleared(t *testing.T) {
	s, _ := newTestStore()
	for i := 0; i < 1005; i++ {
		s.Set("/1/k", false, "v", Expiry{})
	}
	_, err := s.Watch("/1/k", false, false, 3)
	var e *Error
	if !errors.As(err, &e) || e.ErrorCode != EcodeIndexCleared || e.Cause != "the requested history has been cleared [6/3]" || e.Index != 1005 {
		t.Fatalf("watch from a cleared index: %+v", err)
	}
}

func TestSaveAndRecover(t *testing.T) {
	s, c := newTestStore()
	s.Set("/1/a/b", false, "1", Expiry{})
	s.Set("/1/t", false, "2", Expiry{Time: t0.Add(time.Minute)})
	s.Create("/1/q", false, "3", true, Expiry{})
	b, err := s.Save()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"Root", "WatcherHub", "CurrentIndex", "Stats", "CurrentVersion"} {
		if doc[k] == nil {
			t.Errorf("snapshot document lacks %s", k)
		}
	}
	r := New(c.now, ClusterPrefix, KeysPrefix)
	w, _ := r.Watch("/1/a", true, true, 0)
	if err := r.Recover(b); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-w.EventChan(); ok {
		t.Fatal("a watcher outlived the recovery")
	}
	if r.Index() != 3 || !r.HasTTLKeys() {
		t.Fatalf("recovered index %d, TTL keys %v", r.Index(), r.HasTTLKeys())
	}
	if e, err := r.Get("/1/a/b", false, false); err != nil || *e.Node.Value != "1" {
		t.Fatalf("recovered value: %v", err)
	}
	if _, err := r.Set("/1", false, "x", Expiry{}); code(err) != EcodeRootROnly {
		t.Fatalf("namespace writable after recovery: %v", err)
	}
	// The history came along: a watch from index 1 is answered from it.
	w, err = r.Watch("/1/a/b", false, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(w.EventChan(), 1); !equal(got, []string{"set /1/a/b"}) {
		t.Fatalf("history after recovery: %v", got)
	}
	if err := r.Recover([]byte(`{"Root":null}`)); err == nil {
		t.Fatal("a document without root recovered")
	}
}
