package etcdserver

import "testing"

func TestSnapshotDue(t *testing.T) {
	for _, c := range []struct {
		name                             string
		applied, disk, mem, count        uint64
		forced, wantToDisk, wantSnapshot bool
	}{
		{name: "nothing new", applied: 50, disk: 0, mem: 0, count: 10000},
		{name: "memory, 100 entries is not past", applied: 100, disk: 0, mem: 0, count: 10000},
		{name: "memory, past 100 entries", applied: 101, disk: 0, mem: 0, count: 10000, wantSnapshot: true},
		{name: "memory, counted from the last memory snapshot", applied: 150, disk: 0, mem: 101, count: 10000},
		{name: "disk at the count", applied: 10000, disk: 0, mem: 9950, count: 10000, wantToDisk: true, wantSnapshot: true},
		{name: "disk counted from the last disk snapshot", applied: 10050, disk: 10000, mem: 10000, count: 10000},
		{name: "forced with something new", applied: 10001, disk: 10000, mem: 10000, count: 10000, forced: true, wantToDisk: true, wantSnapshot: true},
		{name: "forced with nothing new", applied: 10000, disk: 10000, mem: 10000, count: 10000, forced: true},
		{name: "small count", applied: 5, disk: 0, mem: 0, count: 5, wantToDisk: true, wantSnapshot: true},
	} {
		toDisk, due := snapshotDue(c.applied, c.disk, c.mem, c.count, c.forced)
		if toDisk != c.wantToDisk || due != c.wantSnapshot {
			t.Errorf("%s: toDisk %v, due %v; want %v, %v", c.name, toDisk, due, c.wantToDisk, c.wantSnapshot)
		}
	}
}
