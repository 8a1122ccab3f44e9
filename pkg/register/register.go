// Package register judges histories of register operations (a put, or a linearizable get, of one
// key) for linearizability with porcupine: the in-process simulation (server/sim) and the upgrade
// lab's workload (upgradelab/workload) record such histories and share this one model.
package register

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// Unknown is the Return of a write whose outcome the client did not learn (an error or a
// timeout): it may take effect at any later time.
const Unknown = math.MaxInt64

// Op is one client operation on a register key.
type Op struct {
	Client int
	Key    string
	Write  bool
	// Value is what a write wrote or a read returned ("" for a missing key).
	Value string
	// Call and Return are nanoseconds since the history began; Return is Unknown for a write
	// whose outcome is unknown.
	Call, Return int64
	// Rev is the store revision the response reported (0 when unknown).
	Rev int64
}

// Check judges ops with porcupine within timeout: Ok when some order of them, consistent with
// real time, is a sequence of register reads and writes; Illegal when none is; Unknown when the
// search did not end in time.
func Check(ops []Op, timeout time.Duration) porcupine.CheckResult {
	in := make([]porcupine.Operation, 0, len(ops))
	for _, op := range ops {
		in = append(in, porcupine.Operation{ClientId: op.Client, Input: op, Call: op.Call, Output: op.Value, Return: op.Return})
	}
	return porcupine.CheckOperationsTimeout(Model, in, timeout)
}

// Model is one register per key (judged key by key): a write sets it, a read returns it.
var Model = porcupine.Model{
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

// Applied says at which revision a write of value to key took effect (the store's own history,
// read once the cluster is quiet); ok is false for a write that never did.
type Applied func(key, value string) (rev int64, ok bool)

// Writes is what a store's history says of register writes: the revision at which each value was
// first written to each key. Its Applied method is what ResolveUnknown asks.
type Writes map[[2]string]int64

// Put records a put of value to key at rev, read from the history in any order.
func (w Writes) Put(key, value string, rev int64) {
	k := [2]string{key, value}
	if old, ok := w[k]; !ok || rev < old {
		w[k] = rev
	}
}

// Applied is the revision at which value was first written to key, if it ever was.
func (w Writes) Applied(key, value string) (int64, bool) {
	rev, ok := w[[2]string{key, value}]
	return rev, ok
}

// ResolveUnknown narrows the writes of unknown outcome with what the store's history says of
// them, so porcupine judges far fewer open-ended operations (each one multiplies its search):
//   - a write whose value never appeared did not take effect: it is left out;
//   - a write that took effect at revision R took effect before any operation that reported a
//     revision of R or later returned: that return is its latest possible one.
//
// Values must be unique per key (each write writes a value of its own). The store's history must
// reach past every recorded operation: read it once the clients have stopped.
func ResolveUnknown(ops []Op, applied Applied) []Op {
	// Earliest return among the operations that reported each revision or a later one.
	type seen struct{ rev, ret int64 }
	var known []seen
	for _, op := range ops {
		if op.Return != Unknown && op.Rev > 0 {
			known = append(known, seen{op.Rev, op.Return})
		}
	}
	sort.Slice(known, func(i, j int) bool { return known[i].rev > known[j].rev })
	// After this pass, known[i].ret is the earliest return of any operation with revision >= known[i].rev.
	for i := 1; i < len(known); i++ {
		known[i].ret = min(known[i].ret, known[i-1].ret)
	}
	out := make([]Op, 0, len(ops))
	for _, op := range ops {
		if !op.Write || op.Return != Unknown {
			out = append(out, op)
			continue
		}
		rev, ok := applied(op.Key, op.Value)
		if !ok {
			continue
		}
		op.Rev = rev
		// The last entry of known with a revision >= rev holds the earliest such return.
		i := sort.Search(len(known), func(i int) bool { return known[i].rev < rev })
		if i > 0 {
			op.Return = max(known[i-1].ret, op.Call+1)
		}
		out = append(out, op)
	}
	return out
}
