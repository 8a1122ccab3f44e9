package etcdserver

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// batchRun runs a batcher whose steps arrive on the returned channel.
func batchRun(t *testing.T) (*proposalBatcher, <-chan []raftpb.Entry) {
	t.Helper()
	b := newProposalBatcher()
	stop := make(chan struct{})
	steps := make(chan []raftpb.Entry, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.run(stop, func(es []raftpb.Entry, os []proposalOrigin) {
			if len(es) != len(os) {
				t.Errorf("%d entries but %d origins", len(es), len(os))
			}
			steps <- es
		})
	}()
	t.Cleanup(func() { close(stop); <-done })
	return b, steps
}

func datas(es []raftpb.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, string(e.Data))
	}
	return out
}

func TestBatcherStepsAtOnceWhileTheLoopIsIdle(t *testing.T) {
	b, steps := batchRun(t)
	b.add([]byte("a"), proposalOrigin{id: 1})
	if got := datas(<-steps); len(got) != 1 || got[0] != "a" {
		t.Fatalf("stepped %q, want [a]", got)
	}
}

func TestBatcherGathersWhileTheLoopIsBusy(t *testing.T) {
	b, steps := batchRun(t)
	b.loopBusy()
	for _, d := range []string{"a", "b", "c"} {
		b.add([]byte(d), proposalOrigin{id: 1})
	}
	select {
	case es := <-steps:
		t.Fatalf("stepped %q while the loop was busy", datas(es))
	default:
	}
	b.loopFree()
	if got := datas(<-steps); len(got) != 3 || got[0] != "a" || got[2] != "c" {
		t.Fatalf("stepped %q, want [a b c] in one batch", got)
	}
	// The loop is busy again before the batcher looked: what gathered since is still stepped
	// when the loop frees, and the batch raft took is not written to again.
	b.loopBusy()
	b.add([]byte("d"), proposalOrigin{from: 2})
	b.loopFree()
	b.loopBusy()
	got := <-steps
	if d := datas(got); len(d) != 1 || d[0] != "d" {
		t.Fatalf("stepped %q, want [d]", d)
	}
	b.add([]byte("e"), proposalOrigin{id: 3})
	b.loopFree()
	if d := datas(<-steps); len(d) != 1 || d[0] != "e" {
		t.Fatalf("stepped %q, want [e]", d)
	}
	if string(got[0].Data) != "d" || len(got) != 1 {
		t.Fatalf("a stepped batch changed afterwards: %q", datas(got))
	}
}
