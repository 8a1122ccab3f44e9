package sim

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Op is one client operation on a register key, as recorded.
type Op struct {
	Client int
	Key    string
	Write  bool
	// Value is what a write wrote or a read returned.
	Value string
	// Call and Return are nanoseconds since the run began; Return is math.MaxInt64 for a write
	// whose outcome is unknown (it failed or timed out, and may still have been applied).
	Call, Return int64
	// Rev is the store revision the response reported (0 when unknown).
	Rev int64
}

// History records what the clients did and saw.
type History struct {
	mu    sync.Mutex
	start time.Time
	ops   []Op
	// acked are the ledger writes the cluster acknowledged, key -> value.
	acked map[string]string
}

// NewHistory starts a history now.
func NewHistory() *History { return &History{start: time.Now(), acked: map[string]string{}} }

func (h *History) now() int64 { return int64(time.Since(h.start)) }

// Add records an operation.
func (h *History) Add(op Op) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// Ack records an acknowledged ledger write.
func (h *History) Ack(key, value string) {
	h.mu.Lock()
	h.acked[key] = value
	h.mu.Unlock()
}

// Len is how many operations are recorded.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

// Ops is a copy of the recorded operations.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Op(nil), h.ops...)
}

// Acked is a copy of the acknowledged ledger writes.
func (h *History) Acked() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]string, len(h.acked))
	for k, v := range h.acked {
		out[k] = v
	}
	return out
}

// CheckLinearizable judges the register operations with porcupine: nil when some order
// of them, consistent with real time, is a sequence of register reads and writes.
func CheckLinearizable(ops []Op, timeout time.Duration) error {
	in := make([]porcupine.Operation, 0, len(ops))
	for _, op := range ops {
		in = append(in, porcupine.Operation{ClientId: op.Client, Input: op, Call: op.Call, Output: op.Value, Return: op.Return})
	}
	switch porcupine.CheckOperationsTimeout(registerModel, in, timeout) {
	case porcupine.Ok:
		return nil
	case porcupine.Illegal:
		return fmt.Errorf("the history of %d operations is not linearizable", len(ops))
	default:
		return fmt.Errorf("linearizability of %d operations not decided within %v", len(ops), timeout)
	}
}

// registerModel: each key is a register; a write sets it, a read returns it.
var registerModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(Op).Key
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]string, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		op := input.(Op)
		if op.Write {
			return true, op.Value
		}
		return output.(string) == state.(string), state
	},
	DescribeOperation: func(input, output any) string {
		op := input.(Op)
		if op.Write {
			return fmt.Sprintf("put(%s, %s)", op.Key, op.Value)
		}
		return fmt.Sprintf("get(%s) -> %q", op.Key, output)
	},
}

// CheckRevisions: each client's acknowledged operations, one after another in real time, report
// revisions that never go down (a linearizable store's revision only grows).
func CheckRevisions(ops []Op) error {
	last := map[int]Op{}
	sorted := append([]Op(nil), ops...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	for _, op := range sorted {
		if op.Rev == 0 || op.Return == math.MaxInt64 {
			continue
		}
		if prev, ok := last[op.Client]; ok && op.Rev < prev.Rev {
			return fmt.Errorf("client %d saw revision %d after %d (%s then %s)", op.Client, op.Rev, prev.Rev, describe(prev), describe(op))
		}
		last[op.Client] = op
	}
	return nil
}

func describe(op Op) string {
	if op.Write {
		return fmt.Sprintf("put(%s, %s)", op.Key, op.Value)
	}
	return fmt.Sprintf("get(%s) -> %q", op.Key, op.Value)
}

// LostWrites are the acknowledged ledger writes that have is missing or holds another value.
func LostWrites(acked, have map[string]string) []string {
	var lost []string
	for k, v := range acked {
		if have[k] != v {
			lost = append(lost, k)
		}
	}
	sort.Strings(lost)
	return lost
}

// Event is one change a watcher delivered.
type Event struct {
	Rev   int64
	Key   string
	Value string
	// Delete marks a deletion.
	Delete bool
}

// CheckWatch judges one watcher's events against the store's history: from its first revision
// to the last (final), every revision appears, in order, with exactly the changes the
// reference (the events every revision holds, from the store) has.
func CheckWatch(name string, got []Event, reference map[int64][]Event, from, final int64) error {
	i := 0
	for rev := from; rev <= final; rev++ {
		want := reference[rev]
		for _, w := range want {
			if i >= len(got) {
				return fmt.Errorf("watch on %s ended before revision %d (%d events delivered)", name, rev, len(got))
			}
			g := got[i]
			if g != w {
				return fmt.Errorf("watch on %s: event %d is %+v, the store's revision %d has %+v", name, i, g, rev, w)
			}
			i++
		}
	}
	if i < len(got) {
		return fmt.Errorf("watch on %s delivered %d events beyond revision %d: first %+v", name, len(got)-i, final, got[i])
	}
	return nil
}

// CheckClusterVersions judges the cluster versions a member reported over time: never lower
// than before (outside a downgrade, which the simulation does not run yet) and never above the
// member's own level.
func CheckClusterVersions(name string, seen []string, level string) error {
	prev := ""
	for _, v := range seen {
		if v == "" {
			continue
		}
		if prev != "" && lessVersion(v, prev) {
			return fmt.Errorf("%s lowered the cluster version from %s to %s", name, prev, v)
		}
		if lessVersion(level, v) {
			return fmt.Errorf("%s reported cluster version %s, above its level %s", name, v, level)
		}
		prev = v
	}
	return nil
}

// lessVersion compares major.minor versions.
func lessVersion(a, b string) bool {
	var am, an, bm, bn int
	fmt.Sscanf(a, "%d.%d", &am, &an)
	fmt.Sscanf(b, "%d.%d", &bm, &bn)
	return am < bm || am == bm && an < bn
}
