package workload

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func TestLinearizabilityCatchesAPlantedStaleRead(t *testing.T) {
	w := &Workload{}
	ms := func(n int) int64 { return int64(time.Duration(n) * time.Millisecond) }
	w.ops = []Op{
		{Client: 0, Key: "r", Write: true, Value: "v1", Call: ms(0), Return: ms(10)},
		{Client: 1, Key: "r", Write: true, Value: "v2", Call: ms(20), Return: ms(30)},
		{Client: 2, Key: "r", Value: "v2", Call: ms(40), Return: ms(50)},
	}
	if v, _ := w.Linearizable(5 * time.Second); v != porcupine.Ok {
		t.Fatalf("a good history: %v", v)
	}
	// Read after v2 was acknowledged returns v1: stale.
	w.ops = append(w.ops, Op{Client: 2, Key: "r", Value: "v1", Call: ms(60), Return: ms(70)})
	if v, _ := w.Linearizable(5 * time.Second); v != porcupine.Illegal {
		t.Fatalf("a stale read: %v", v)
	}
}

func TestCheckWatchCatchesGapsDuplicatesAndDisorder(t *testing.T) {
	acked := []AckedPut{{"k1", 10}, {"k2", 11}, {"k3", 12}, {"k4", 20}}
	good := []WatchEvent{{"k1", 10}, {"other", 10}, {"k2", 11}, {"k3", 12}}
	if p := CheckWatch(good, acked, nil, 15); len(p) != 0 {
		t.Errorf("a good watch (k4 is past upTo): %v", p)
	}
	if p := CheckWatch([]WatchEvent{{"k1", 10}, {"k3", 12}}, acked, nil, 15); len(p) != 1 || !strings.Contains(p[0], "missed 1 acknowledged writes, e.g. k2 at revision 11") {
		t.Errorf("a gap: %v", p)
	}
	if p := CheckWatch([]WatchEvent{{"k1", 10}, {"k3", 12}}, acked, []RevRange{{11, 11}}, 15); len(p) != 0 {
		t.Errorf("a gap excused by a compaction: %v", p)
	}
	if p := CheckWatch([]WatchEvent{{"k1", 10}, {"k2", 11}, {"k2", 11}, {"k3", 12}}, acked, nil, 15); len(p) != 1 || !strings.Contains(p[0], "delivered twice") {
		t.Errorf("a duplicate: %v", p)
	}
	if p := CheckWatch([]WatchEvent{{"k1", 10}, {"k3", 12}, {"k2", 11}}, acked, nil, 15); len(p) != 1 || !strings.Contains(p[0], "out of order") {
		t.Errorf("disorder: %v", p)
	}
}
