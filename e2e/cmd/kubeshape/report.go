package main

import (
	"fmt"
	"strings"

	"etcdx/e2e/reqrecord"
)

// phaseNotes says what each phase of the recording is.
var phaseNotes = map[string]string{
	"start":  "kube-apiserver starting on an empty etcd, until /readyz answers ok (its bootstrap objects, its caches filling)",
	"idle":   "kube-apiserver ready, no client: what it sends on its own",
	"setup":  "the fleet creating its namespace, nodes, node leases and pods",
	"steady": "the fleet running: lease renewals, node status, pod churn with its events, informer restarts, per-node pod watches. A watch cache of kube-apiserver that refilled in the phase (its reflector's watch ends after 5 to 10 minutes) shows as a RangeStream of its resource in pages of 10000 at a revision (`limit=10000 rev`) and a new watch from that revision",
}

func markdown(o options, r record, order []reqrecord.Window) string {
	var b strings.Builder
	f := r.Fleet
	fmt.Fprintf(&b, "# What kube-apiserver sends to etcd\n\n")
	fmt.Fprintf(&b, "Recorded on %s by `make kube-shape` (e2e/cmd/kubeshape): kube-apiserver %s, built from the Go module\n", r.Date, r.Kubernetes)
	fmt.Fprintf(&b, "proxy and started with kubeadm's flags, in front of one etcd member through a proxy that forwards every\n")
	fmt.Fprintf(&b, "request unchanged and records its shape (e2e/reqrecord). A fleet (e2e/kubeapi) plays %d nodes' kubelets\n", f.Nodes)
	fmt.Fprintf(&b, "(lease renewed every %v, status every %v, a watch of its own pods: %v), the scheduler (binds each pod)\n", f.LeaseRenew, f.NodeStatus, f.NodeWatches)
	fmt.Fprintf(&b, "and a ReplicaSet controller (%d pods per node, %.2f replaced per node per minute, each pod's life with\n", f.PodsPerNode, f.ChurnPerNodeMinute)
	fmt.Fprintf(&b, "its events), and an informer listing every pod in pages of 500 every %v. The fleet sent %d requests, %d failed.\n\n", f.InformerRestart, r.FleetCalls, r.FleetFailed)
	b.WriteString("The bench's Kubernetes-shaped workload (`make bench`, part kube; `make soak`) takes its defaults from this record:\n")
	b.WriteString("e2e/kubeload/shape.go's Defaults, whose flags' help names \"(record)\" for each figure read here (per node per\n")
	b.WriteString("minute in the steady phase, divided by the pod lives for what a pod's life costs).\n")
	b.WriteString("A row is one kind of request: method, the resource its key names (`/registry/<resource>/...`), what its\n")
	b.WriteString("range covers (blank: one key) and its shape (a Range's options; a Txn as `compares ? then-ops : else-ops`;\n")
	b.WriteString("a watch request's options; a watch answer's kind, by the resource its watch covers). Sizes are\n")
	b.WriteString("p50 / p99 / max bytes; \"then\" counts Txns whose compares held.\n\n")
	for _, w := range order {
		rows := r.Phases[w.Phase]
		fmt.Fprintf(&b, "## Phase %s (%s)\n\n%s.\n\n", w.Phase, r.PhaseLength[w.Phase], phaseNotes[w.Phase])
		perNode := w.Phase == "steady" && f.Nodes > 0
		b.WriteString("| method | resource | span | shape | calls | per min |")
		if perNode {
			b.WriteString(" per node per min |")
		}
		b.WriteString(" request bytes | values written | answer count | answer value bytes | then | leased | errors |\n|---|---|---|---|---|---|")
		if perNode {
			b.WriteString("---|")
		}
		b.WriteString("---|---|---|---|---|---|---|\n")
		for _, x := range rows {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %.1f |", x.Method, md(x.Resource), x.Span, md(x.Shape), x.Calls, x.PerMinute)
			if perNode {
				fmt.Fprintf(&b, " %.3f |", x.PerMinute/float64(f.Nodes))
			}
			fmt.Fprintf(&b, " %s | %s | %s | %s | %d | %d | %d |\n", x.RequestBytes, x.ValueBytes, x.AnswerCount, x.AnswerBytes, x.Then, x.Leased, x.Errors)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// md keeps a cell's text from breaking the table.
func md(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(s, "|", "\\|") + "`"
}
