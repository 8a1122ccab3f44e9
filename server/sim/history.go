package sim

import (
	"fmt"
	"maps"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"etcdx/pkg/judge"
	"etcdx/pkg/register"
)

// Op is one client operation on a register key, as recorded (Return is register.Unknown for a
// write whose outcome is unknown).
type Op = register.Op

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
	return maps.Clone(h.acked)
}

// CheckLinearizable judges the register operations with porcupine: nil when some order
// of them, consistent with real time, is a sequence of register reads and writes.
func CheckLinearizable(ops []Op, timeout time.Duration) error {
	switch register.Check(ops, timeout) {
	case porcupine.Ok:
		return nil
	case porcupine.Illegal:
		return fmt.Errorf("the history of %d operations is not linearizable", len(ops))
	default:
		return fmt.Errorf("linearizability of %d operations not decided within %v", len(ops), timeout)
	}
}

// appliedIn is the register writes of the store's history (by revision, as storeHistory reads it).
func appliedIn(ref map[int64][]Event) register.Writes {
	w := register.Writes{}
	for rev, evs := range ref {
		for _, e := range evs {
			if !e.Delete {
				w.Put(e.Key, e.Value, rev)
			}
		}
	}
	return w
}

// CheckRevisions: each client's acknowledged operations, one after another in real time, report
// revisions that never go down (a linearizable store's revision only grows): judge.Monotonic on
// the history's acknowledged operations in the order they were called.
func CheckRevisions(ops []Op) []judge.Finding {
	sorted := append([]Op(nil), ops...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	byClient := map[int][]judge.Seen{}
	for _, op := range sorted {
		if op.Rev == 0 || op.Return == math.MaxInt64 {
			continue
		}
		byClient[op.Client] = append(byClient[op.Client], judge.Seen{Op: describe(op), Revision: op.Rev})
	}
	return judge.Monotonic(byClient)
}

func describe(op Op) string {
	if op.Write {
		return fmt.Sprintf("put(%s, %s)", op.Key, op.Value)
	}
	return fmt.Sprintf("get(%s) -> %q", op.Key, op.Value)
}

// Event is one change a watcher delivered, or the store made.
type Event = judge.Event

// VersionSample is the cluster version a member reported at At (History.now), and the level the
// member ran as then.
type VersionSample = judge.VersionSample
