package etcdserver

import "testing"

func TestSnapshotDue(t *testing.T) {
	for _, c := range []struct {
		name                             string
		applied, disk, mem, memBytes     uint64
		count                            uint64
		forced, wantToDisk, wantSnapshot bool
	}{
		{name: "nothing new", applied: 50, count: 10000},
		{name: "memory, 999 small entries", applied: 999, memBytes: 999 * 300, count: 10000},
		{name: "memory, 1000 entries", applied: 1000, memBytes: 1000 * 300, count: 10000, wantSnapshot: true},
		{name: "memory, counted from the last memory snapshot", applied: 1500, mem: 1000, memBytes: 500 * 300, count: 10000},
		{name: "memory, large entries reach the byte bound first", applied: 140, memBytes: 140 * 30000, count: 10000, wantSnapshot: true},
		{name: "memory, bytes just under the bound", applied: 100, memBytes: memorySnapshotBytes - 1, count: 10000},
		{name: "memory, bytes but no new entry", applied: 1000, mem: 1000, memBytes: memorySnapshotBytes, count: 10000},
		{name: "disk at the count", applied: 10000, mem: 9950, count: 10000},
		{name: "disk past the count", applied: 10001, mem: 9950, count: 10000, wantToDisk: true, wantSnapshot: true},
		{name: "disk counted from the last disk snapshot", applied: 10050, disk: 10000, mem: 10000, count: 10000},
		{name: "forced with something new", applied: 10001, disk: 10000, mem: 10000, count: 10000, forced: true, wantToDisk: true, wantSnapshot: true},
		{name: "forced with nothing new", applied: 10000, disk: 10000, mem: 10000, count: 10000, forced: true},
		{name: "small count", applied: 5, count: 5},
		{name: "small count, one past", applied: 6, count: 5, wantToDisk: true, wantSnapshot: true},
	} {
		toDisk, due := snapshotDue(c.applied, c.disk, c.mem, c.memBytes, c.count, c.forced)
		if toDisk != c.wantToDisk || due != c.wantSnapshot {
			t.Errorf("%s: toDisk %v, due %v; want %v, %v", c.name, toDisk, due, c.wantToDisk, c.wantSnapshot)
		}
	}
}
