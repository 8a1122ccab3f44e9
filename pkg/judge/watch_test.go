package judge

import (
	"reflect"
	"strings"
	"testing"
)

func TestWatchPlantedFaults(t *testing.T) {
	// The store's history: revision 3 is a txn that put b and deleted c.
	h := map[int64][]Event{
		2: {{Rev: 2, Key: "a", Value: "1"}},
		3: {{Rev: 3, Key: "b", Value: "1"}, {Rev: 3, Key: "c", Delete: true}},
		4: {{Rev: 4, Key: "a", Value: "2"}},
	}
	full := []Event{h[2][0], h[3][0], h[3][1], h[4][0]}
	withHistory := WatchReference{History: h, From: 2, UpTo: 4}
	acked := []Event{{Rev: 2, Key: "a"}, {Rev: 4, Key: "a"}}
	// What a harness that records keys and revisions only sees.
	keysOnly := func(es []Event) []Event {
		var out []Event
		for _, e := range es {
			out = append(out, Event{Rev: e.Rev, Key: e.Key})
		}
		return out
	}
	withAcked := WatchReference{Acked: acked, From: 1, UpTo: 4}
	cases := []struct {
		name string
		got  []Event
		ref  WatchReference
		want []Check
		says string
	}{
		{"every change, history", full, withHistory, nil, ""},
		{"every change, acknowledged writes", keysOnly(full), withAcked, nil, ""},
		{"events past UpTo are not judged without the history", append(keysOnly(full), Event{Rev: 9, Key: "z"}), withAcked, nil, ""},
		{"a revision skipped", []Event{h[2][0], h[4][0]}, withHistory, []Check{WatchMissed}, "2 events, first {Rev:3 Key:b"},
		{"an acknowledged write skipped", keysOnly(full[:3]), withAcked, []Check{WatchMissed}, "the acknowledged write of a at revision 4"},
		{"a skipped write in an excused range", keysOnly(full[:3]), WatchReference{Acked: acked, From: 1, UpTo: 4, Excused: []RevRange{{4, 4}}}, nil, ""},
		{"an invented event", append(append([]Event{}, full...), Event{Rev: 4, Key: "x", Value: "9"}), withHistory, []Check{WatchInvented}, "Key:x"},
		{"a wrong value", []Event{h[2][0], h[3][0], h[3][1], {Rev: 4, Key: "a", Value: "3"}}, withHistory, []Check{WatchMissed, WatchInvented}, "Value:3"},
		{"a put for a delete", []Event{h[2][0], h[3][0], {Rev: 3, Key: "c"}, h[4][0]}, withHistory, []Check{WatchMissed, WatchInvented}, "Key:c"},
		{"an event before the start", append([]Event{{Rev: 1, Key: "a", Value: "0"}}, full...), withHistory, []Check{WatchInvented}, "before revision 2"},
		{"revisions reordered", []Event{h[3][0], h[3][1], h[2][0], h[4][0]}, withHistory, []Check{WatchOutOfOrder}, "came after revision 3"},
		{"a txn's changes reordered", []Event{h[2][0], h[3][1], h[3][0], h[4][0]}, withHistory, []Check{WatchOutOfOrder}, "revision 3's changes"},
		{"a change delivered twice", []Event{h[2][0], h[3][0], h[3][1], h[3][1], h[4][0]}, withHistory, []Check{WatchDuplicate}, "c at revision 3 delivered twice"},
		{"a change delivered twice, acknowledged writes", keysOnly([]Event{h[2][0], h[2][0], h[4][0]}), withAcked, []Check{WatchDuplicate}, "a at revision 2 delivered twice"},
	}
	for _, c := range cases {
		fs := Watch("w1", c.got, c.ref)
		if got := Fired(fs); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: fired %v, want %v (%v)", c.name, got, c.want, Strings(fs))
			continue
		}
		if c.says != "" && !strings.Contains(strings.Join(Strings(fs), "\n"), c.says) {
			t.Errorf("%s: %v does not say %q", c.name, Strings(fs), c.says)
		}
	}
}
