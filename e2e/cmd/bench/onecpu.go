package main

import (
	"fmt"
	"os"
	"runtime"
)

// oneCPUWorkloads are the single-member workloads the onecpu part runs, renamed for their rows.
func oneCPUWorkloads(scale int) []workload {
	var out []workload
	for _, w := range singleWorkloads(scale) {
		if w.oneCPU {
			w.name = "one CPU: " + w.name
			out = append(out, w)
		}
	}
	return out
}

// benchOneCPU is benchSingle's writes on members limited to one CPU, as in a container with a
// one-CPU limit: each member runs with GOMAXPROCS=1, every thread pinned to the last CPU, and
// the bench's clients on the other CPUs for the part's length (all of them again after). Under
// --pin-member-cpu the whole run is pinned already and that CPU is kept.
func benchOneCPU(subs []subject, o options, profDir string) (map[string]sample, error) {
	if o.pinCPU < 0 {
		n := runtime.NumCPU()
		if n < 2 {
			return nil, fmt.Errorf("one CPU for the members and another for the clients: this machine has %d", n)
		}
		o.pinCPU = n - 1
		all := fmt.Sprintf("0-%d", n-1)
		if err := pin(os.Getpid(), fmt.Sprintf("0-%d", n-2)); err != nil {
			return nil, err
		}
		defer func() {
			if err := pin(os.Getpid(), all); err != nil {
				fmt.Fprintln(os.Stderr, "bench: the clients stay on CPUs other than the last:", err)
			}
		}()
	}
	servers, smps, stop, err := startSideBySide(subs, o, profDir != "")
	defer stop()
	if err != nil {
		return smps, err
	}
	err = runPairs(servers, smps, oneCPUWorkloads(o.scale), o, profDir, func(s *server, r result, spent costs) {
		spent.print(s.label, r.ops)
	})
	return smps, err
}
