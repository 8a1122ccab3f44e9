package mvcc

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// TestWatchFanOutOnOneStream: watchers share one stream's queue of 128 responses. Past it they
// catch up from the store with every missed revision in one response, so 1,000 watchers behind by
// 300 puts get far fewer than 300,000 responses. Either way each watcher gets every event once,
// in order, and the slow-watcher gauge returns to zero.
func TestWatchFanOutOnOneStream(t *testing.T) {
	for _, tc := range []struct {
		watchers, puts int
		behind         bool // whether the puts overflow the stream's queue
	}{
		{watchers: 10, puts: 12},
		{watchers: 1000, puts: 300, behind: true},
	} {
		t.Run(fmt.Sprintf("%d watchers, %d puts", tc.watchers, tc.puts), func(t *testing.T) {
			_, s := openStore(t, filepath.Join(t.TempDir(), "db"))
			ws := s.NewWatchStream()
			defer ws.Close()
			for i := 0; i < tc.watchers; i++ {
				if _, err := ws.Watch(0, []byte("fan/"), []byte("fan0"), 0); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < tc.puts; i++ {
				put(t, s, fmt.Sprintf("fan/%04d", i), "v")
			}
			_, slow, _ := s.watch.counts()
			if (slow > 0) != tc.behind {
				t.Fatalf("%d of %d watchers behind after %d puts, want behind=%v", slow, tc.watchers, tc.puts, tc.behind)
			}
			got := map[int64][]int64{}
			received, responses := 0, 0
			deadline := time.After(20 * time.Second)
			for received < tc.watchers*tc.puts {
				select {
				case r := <-ws.Chan():
					responses++
					for _, ev := range r.Events {
						got[r.WatchID] = append(got[r.WatchID], ev.KV.ModRevision)
						received++
					}
				case <-deadline:
					t.Fatalf("received %d of %d events", received, tc.watchers*tc.puts)
				}
			}
			if len(got) != tc.watchers {
				t.Fatalf("events for %d watchers, want %d", len(got), tc.watchers)
			}
			for id, revs := range got {
				if len(revs) != tc.puts {
					t.Fatalf("watcher %d got %d events, want %d", id, len(revs), tc.puts)
				}
				for i, rev := range revs {
					if want := int64(i + 2); rev != want { // the first put is revision 2
						t.Fatalf("watcher %d: event %d has revision %d, want %d", id, i, rev, want)
					}
				}
			}
			if tc.behind && responses > tc.watchers*tc.puts/10 {
				t.Fatalf("%d responses for %d events: the catch-up did not put missed revisions together", responses, received)
			}
			if _, slow, _ := s.watch.counts(); slow != 0 {
				t.Fatalf("%d watchers still behind after every event arrived", slow)
			}
		})
	}
}

// TestCatchUpServesLongestWaitingFirst: when a stream's queue cannot take every lagging watcher,
// a catch-up pass fills it with the watchers that have waited longest (the lowest next revision)
// and reports that some were left behind, so the next pass comes soon and serves the rest. A pass
// that can send nothing says so, which leaves the retry to the 100 ms tick.
func TestCatchUpServesLongestWaitingFirst(t *testing.T) {
	_, s := openStore(t, filepath.Join(t.TempDir(), "db"))
	for i := 0; i < 10; i++ {
		put(t, s, fmt.Sprintf("old/%d", i), "v") // revisions 2..11
	}
	s.Close() // stop the background catch-up: the test runs each pass itself

	ws := s.NewWatchStream()
	defer ws.Close()
	const watchers = 200
	queue := cap(ws.ch)
	startOf := map[int64]int64{}
	for _, i := range rand.Perm(watchers) {
		start := int64(2 + i%10)
		id, err := ws.Watch(0, []byte("old/"), []byte("old0"), start)
		if err != nil {
			t.Fatal(err)
		}
		startOf[id] = start
	}
	starts := slices.Sorted(maps.Values(startOf))
	latestServed := starts[queue-1] // the newest start revision among the longest-waiting queue-full

	sent, behind := s.watch.syncOnce()
	if !sent || !behind {
		t.Fatalf("first pass: sent=%v behind=%v, want both: %d watchers, a queue of %d", sent, behind, watchers, queue)
	}
	got := map[int64]int{}
	for len(ws.ch) > 0 {
		r := <-ws.ch
		if startOf[r.WatchID] > latestServed {
			t.Fatalf("watcher %d (from revision %d) was served before some from revision %d and earlier were",
				r.WatchID, startOf[r.WatchID], latestServed)
		}
		got[r.WatchID] = len(r.Events)
	}
	if len(got) != queue {
		t.Fatalf("first pass served %d watchers, want a full queue of %d", len(got), queue)
	}

	for i := 0; i < queue; i++ { // fill the queue as a client that stopped reading would leave it
		ws.ch <- WatchResponse{WatchID: -2}
	}
	if sent, behind := s.watch.syncOnce(); sent || !behind {
		t.Fatalf("pass with a full queue: sent=%v behind=%v, want only behind", sent, behind)
	}
	for len(ws.ch) > 0 {
		<-ws.ch
	}
	if sent, behind := s.watch.syncOnce(); !sent || behind {
		t.Fatalf("last pass: sent=%v behind=%v, want only sent", sent, behind)
	}
	for len(ws.ch) > 0 {
		r := <-ws.ch
		got[r.WatchID] = len(r.Events)
	}
	for id, start := range startOf {
		if want := int(12 - start); got[id] != want {
			t.Fatalf("watcher %d from revision %d got %d events, want %d", id, start, got[id], want)
		}
	}
	if _, slow, _ := s.watch.counts(); slow != 0 {
		t.Fatalf("%d watchers still behind after the last pass", slow)
	}
}

func TestWatcherPick(t *testing.T) {
	ev := func(key string, rev int64) Event {
		return Event{Type: mvccpb.PUT, KV: mvccpb.KeyValue{Key: []byte(key), ModRevision: rev}}
	}
	evs := []Event{ev("a", 5), ev("b", 5), ev("c", 6), ev("x", 6), ev("d", 7)}
	noDeletes := func(e Event) bool { return e.Type == mvccpb.DELETE }
	noC := func(e Event) bool { return string(e.KV.Key) == "c" }
	tests := []struct {
		name    string
		w       watcher
		want    string // the picked keys
		inPlace bool   // a run of evs, not a copy
	}{
		{"every event", watcher{key: []byte("a"), end: []byte("z")}, "abcxd", true},
		{"one key", watcher{key: []byte("c")}, "c", true},
		{"a run in the middle", watcher{key: []byte("b"), end: []byte("d")}, "bc", true},
		{"a gap in a range", watcher{key: []byte("b"), end: []byte("x")}, "bcd", false},
		{"from a revision", watcher{key: []byte("a"), end: []byte("z"), minRev: 6}, "cxd", true},
		{"a gap", watcher{key: []byte("a"), end: []byte("e")}, "abcd", false},
		{"a filter", watcher{key: []byte("a"), end: []byte("e"), filters: []EventFilter{noDeletes, noC}}, "abd", false},
		{"nothing", watcher{key: []byte("q")}, "", false},
		{"from key to the end", watcher{key: []byte("d"), end: []byte{}}, "xd", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.w.pick(evs)
			keys := ""
			for _, e := range got {
				keys += string(e.KV.Key)
			}
			if keys != tt.want {
				t.Fatalf("picked %q, want %q", keys, tt.want)
			}
			if len(got) == 0 {
				if got != nil {
					t.Fatal("an empty pick is not nil")
				}
				return
			}
			inPlace := &got[0] == &evs[indexOf(evs, got[0])]
			if inPlace != tt.inPlace {
				t.Fatalf("in place = %v, want %v", inPlace, tt.inPlace)
			}
			if inPlace && cap(got) != len(got) {
				t.Fatalf("a shared run has room to append into evs: len %d cap %d", len(got), cap(got))
			}
		})
	}
}

func indexOf(evs []Event, e Event) int {
	for i := range evs {
		if string(evs[i].KV.Key) == string(e.KV.Key) && evs[i].KV.ModRevision == e.KV.ModRevision {
			return i
		}
	}
	return -1
}

// TestNoProgressBeforeTheStartRevision: a watch that starts from a revision the store has not
// reached (a client resuming on a member that is behind) gets no progress notification until
// the store reaches it, neither its own nor the stream's: the client library resumes a broken
// watch after the last progress revision it saw, and a notification below the start had it
// resume there and receive events from before the start (upstream's robustness suite caught it:
// "broke Resumable", a watch from revision 932 delivering 914 after a member's restart). Once
// the store reaches the start, progress flows as for any synced watcher.
func TestNoProgressBeforeTheStartRevision(t *testing.T) {
	_, s := openStore(t, filepath.Join(t.TempDir(), "db"))
	put(t, s, "a", "1") // revision 2
	ws := s.NewWatchStream()
	defer ws.Close()
	now, err := ws.Watch(0, []byte("b"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ahead, err := ws.Watch(0, []byte("a"), nil, 5)
	if err != nil {
		t.Fatal(err)
	}
	expectNone := func(when string) {
		select {
		case r := <-ws.Chan():
			t.Fatalf("%s: a response at revision %d (watch %d, %d events), before the start revision 5", when, r.Revision, r.WatchID, len(r.Events))
		default:
		}
	}
	for rev := 2; rev < 5; rev++ {
		ws.RequestProgress(ahead)
		if ws.RequestProgressAll() {
			t.Fatalf("at revision %d the stream-wide progress went out", rev)
		}
		expectNone(fmt.Sprintf("at revision %d", rev))
		put(t, s, "a", fmt.Sprint(rev)) // revisions 3, 4, 5: the watch skips 3 and 4
	}
	r := <-ws.Chan()
	if r.WatchID != ahead || len(r.Events) != 1 || r.Events[0].KV.ModRevision != 5 {
		t.Fatalf("at the start revision: %+v, want the event of revision 5", r)
	}
	ws.RequestProgress(ahead)
	if r := <-ws.Chan(); r.WatchID != ahead || r.Revision != 5 || len(r.Events) != 0 {
		t.Fatalf("progress at revision 5: %+v", r)
	}
	// The watch of the next change had its progress all along.
	ws.RequestProgress(now)
	if r := <-ws.Chan(); r.WatchID != now || r.Revision != 5 {
		t.Fatalf("progress of the watch from now: %+v", r)
	}
	if !ws.RequestProgressAll() {
		t.Fatal("every watcher synced and started: the stream-wide progress must go out")
	}
}

// TestCatchUpFromHistoryTakesWatchedKeys: watchers that start in the past catch up from stored
// history (part committed to the database, part still in the write buffer) in which most
// changes are to keys none of them watches. Each gets exactly its own changes, puts and
// deletes, with their values and revisions, in order.
func TestCatchUpFromHistoryTakesWatchedKeys(t *testing.T) {
	be, s := openStore(t, filepath.Join(t.TempDir(), "db"))
	type change struct {
		key, value string
		rev        int64
		del        bool
	}
	var history []change
	write := func(i int) {
		k := fmt.Sprintf("other/%03d", i%17)
		switch {
		case i%7 == 0:
			k = fmt.Sprintf("pods/%03d", i%5)
		case i%11 == 0:
			k = "one"
		}
		v := fmt.Sprintf("v%d", i)
		if i%13 == 0 && slices.ContainsFunc(history, func(c change) bool { return c.key == k }) {
			w := s.Write()
			if _, err := w.DeleteRange([]byte(k), nil); err != nil {
				t.Fatal(err)
			}
			w.End()
			history = append(history, change{key: k, rev: s.Rev(), del: true})
			return
		}
		put(t, s, k, v)
		history = append(history, change{key: k, value: v, rev: s.Rev()})
	}
	for i := 0; i < 300; i++ {
		write(i)
	}
	if err := be.Commit(); err != nil {
		t.Fatal(err)
	}
	for i := 300; i < 400; i++ {
		write(i)
	}
	from := history[10].rev
	ws := s.NewWatchStream()
	defer ws.Close()
	watches := map[string][2]string{"prefix": {"pods/", "pods0"}, "key": {"one", ""}}
	ids := map[int64]string{}
	for name, r := range watches {
		var end []byte
		if r[1] != "" {
			end = []byte(r[1])
		}
		id, err := ws.Watch(0, []byte(r[0]), end, from)
		if err != nil {
			t.Fatal(err)
		}
		ids[id] = name
	}
	want := map[string][]change{}
	for _, c := range history {
		if c.rev < from {
			continue
		}
		if strings.HasPrefix(c.key, "pods/") {
			want["prefix"] = append(want["prefix"], c)
		} else if c.key == "one" {
			want["key"] = append(want["key"], c)
		}
	}
	got := map[string][]change{}
	deadline := time.After(10 * time.Second)
	for len(got["prefix"]) < len(want["prefix"]) || len(got["key"]) < len(want["key"]) {
		select {
		case r := <-ws.Chan():
			for _, ev := range r.Events {
				got[ids[r.WatchID]] = append(got[ids[r.WatchID]], change{key: string(ev.KV.Key), value: string(ev.KV.Value),
					rev: ev.KV.ModRevision, del: ev.Type == mvccpb.DELETE})
			}
		case <-deadline:
			t.Fatalf("got %d and %d events, want %d and %d", len(got["prefix"]), len(got["key"]), len(want["prefix"]), len(want["key"]))
		}
	}
	for name := range watches {
		if !slices.Equal(got[name], want[name]) {
			t.Fatalf("%s watcher:\n got %v\nwant %v", name, got[name], want[name])
		}
	}
}
