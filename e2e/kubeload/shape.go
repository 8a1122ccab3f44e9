package kubeload

import (
	"flag"
	"time"
)

// Shape is the cluster the load plays. Its defaults come from docs/kube-shape.md ("record")
// unless their flag's help says otherwise.
type Shape struct {
	Nodes      int
	APIServers int // an HA control plane's three
	// Stacked: API server a talks to member a alone, as kubeadm's stacked control plane sets
	// kube-apiserver's --etcd-servers to the member on its own machine; otherwise each talks to
	// every member, and where its watch stream lands is the client balancer's pick.
	Stacked bool
	// Per node.
	PodsPerNode        int
	ChurnPerNodeMinute float64
	LeaseRenew         time.Duration
	NodeStatus         time.Duration
	// Per pod life (record: what kube-apiserver wrote for each pod the fleet created and deleted).
	PodUpdates int // bind, status reports, the graceful delete's marks
	PodReads   int // single-object reads from etcd (the deletes read the object)
	// DeleteConflicts is the share of pod deletes whose first Txn compares a stale revision
	// and reads the object back (then deletes it at the revision read).
	DeleteConflicts float64
	EventsPerPod    int
	// Value sizes, bytes (record: p50 of what kube-apiserver wrote).
	NodeBytes, LeaseBytes, PodBytes, EventBytes int
	// Per API server.
	WatchedResources int           // prefixes its watch cache watches (one watch each)
	ProgressRequests time.Duration // how often it asks its watch stream for progress
	RevisionReads    int           // reads of resource keys per minute (the current revision)
	OwnLeases        time.Duration // its identity, master and peer leases, renewed with a fresh etcd lease
	EventLeaseReuse  time.Duration // one etcd lease for the events it writes in this long
	EventTTL         time.Duration // --event-ttl
	Compaction       time.Duration // --etcd-compaction-interval (one API server wins each round)
	// CacheRefill is how often each API server lists every object of a resource from etcd
	// afresh to refill its watch cache (record: every resource once in the 7 minutes, pages of
	// 10000 at a revision, by RangeStream where the member has it): the LIST of every pod is
	// the request the LIST SLO judges.
	CacheRefill time.Duration
	ListPage    int
	Namespaces  int
	Seed        int64
}

// Defaults is the shape docs/kube-shape.md recorded, at nodes nodes.
func Defaults(nodes int) Shape {
	return Shape{
		Nodes: nodes, APIServers: 3, Stacked: true,
		PodsPerNode: 30, ChurnPerNodeMinute: 0.5,
		LeaseRenew: 10 * time.Second, NodeStatus: time.Minute,
		PodUpdates: 6, PodReads: 2, DeleteConflicts: 0.6, EventsPerPod: 7,
		NodeBytes: 6100, LeaseBytes: 480, PodBytes: 4700, EventBytes: 620,
		WatchedResources: 60, ProgressRequests: time.Second, RevisionReads: 45,
		OwnLeases: 10 * time.Second, EventLeaseReuse: time.Minute, EventTTL: time.Hour,
		Compaction: 5 * time.Minute, CacheRefill: 7*time.Minute + 30*time.Second, ListPage: 10000, Namespaces: 50, Seed: 1,
	}
}

// Flags registers the shape's flags (prefix "kube-") on fs, with the defaults d.
func (s *Shape) Flags(fs *flag.FlagSet, d Shape) {
	*s = d
	fs.IntVar(&s.APIServers, "kube-apiservers", d.APIServers, "API servers (each with its own etcd client, watches and background); an HA control plane's three")
	fs.BoolVar(&s.Stacked, "kube-stacked", d.Stacked, "each API server talks to one member, its own (kubeadm's stacked control plane: --etcd-servers=https://127.0.0.1:2379); false: each to every member, its watches wherever its client's balancer puts them")
	fs.IntVar(&s.PodsPerNode, "kube-pods-per-node", d.PodsPerNode, "pods per node (Kubernetes' scalability tests run 30)")
	fs.Float64Var(&s.ChurnPerNodeMinute, "kube-churn", d.ChurnPerNodeMinute, "pods replaced per node per minute")
	fs.DurationVar(&s.LeaseRenew, "kube-lease-renew", d.LeaseRenew, "node lease renewal period (kubelet's default)")
	fs.DurationVar(&s.NodeStatus, "kube-node-status", d.NodeStatus, "node status update period (kubelet reports at least every 5m, and on every change)")
	fs.IntVar(&s.PodUpdates, "kube-pod-updates", d.PodUpdates, "updates of a pod in its life (record: bind, 2 status reports; the delete's marks and the last status)")
	fs.IntVar(&s.PodReads, "kube-pod-reads", d.PodReads, "reads of a pod from etcd in its life (record: by its deletes)")
	fs.Float64Var(&s.DeleteConflicts, "kube-delete-conflicts", d.DeleteConflicts, "share of pod deletes whose first Txn finds the pod changed (record)")
	fs.IntVar(&s.EventsPerPod, "kube-events-per-pod", d.EventsPerPod, "events written in a pod's life (record: scheduler, kubelet, ReplicaSet controller)")
	fs.IntVar(&s.NodeBytes, "kube-node-bytes", d.NodeBytes, "node object size (record)")
	fs.IntVar(&s.LeaseBytes, "kube-lease-bytes", d.LeaseBytes, "node lease object size (record)")
	fs.IntVar(&s.PodBytes, "kube-pod-bytes", d.PodBytes, "pod object size (record)")
	fs.IntVar(&s.EventBytes, "kube-event-bytes", d.EventBytes, "event object size (record)")
	fs.IntVar(&s.WatchedResources, "kube-watched-resources", d.WatchedResources, "prefixes each API server watches (record)")
	fs.DurationVar(&s.ProgressRequests, "kube-progress-requests", d.ProgressRequests, "how often each API server asks for watch progress (record)")
	fs.IntVar(&s.RevisionReads, "kube-revision-reads", d.RevisionReads, "reads of resource keys per API server per minute (record)")
	fs.DurationVar(&s.OwnLeases, "kube-own-leases", d.OwnLeases, "each API server's own lease renewals (record)")
	fs.DurationVar(&s.EventLeaseReuse, "kube-event-lease-reuse", d.EventLeaseReuse, "events share an etcd lease for this long (record)")
	fs.DurationVar(&s.EventTTL, "kube-event-ttl", d.EventTTL, "event TTL (kube-apiserver's --event-ttl default)")
	fs.DurationVar(&s.Compaction, "kube-compaction", d.Compaction, "compaction period (kube-apiserver's --etcd-compaction-interval default)")
	fs.DurationVar(&s.CacheRefill, "kube-cache-refill", d.CacheRefill, "how often each API server lists pods, nodes and leases from etcd afresh to refill its cache (record: once in 7 minutes; its reflector's watch ends after 5 to 10)")
	fs.IntVar(&s.ListPage, "kube-list-page", d.ListPage, "page size of those lists (record), by RangeStream where the member has it")
	fs.IntVar(&s.Namespaces, "kube-namespaces", d.Namespaces, "namespaces the pods are spread over")
}

// MemberFlags are the flags the members run with under this load: kubeadm's (its etcd
// manifest's progress notifications and snapshot count) and the quota a cluster of this size
// is given (upstream's suggested largest).
var MemberFlags = []string{"--watch-progress-notify-interval=5s", "--snapshot-count=10000", "--quota-backend-bytes=8589934592"}

// perSecond is the rate of one kind of request at this shape.
func perSecond(n int, period time.Duration) float64 {
	if period <= 0 {
		return 0
	}
	return float64(n) / period.Seconds()
}

// WritesPerSecond is the mutating requests per second this shape sends (for reports).
func (s Shape) WritesPerSecond() float64 {
	podLives := float64(s.Nodes) * s.ChurnPerNodeMinute / 60
	return perSecond(s.Nodes, s.LeaseRenew) + perSecond(s.Nodes, s.NodeStatus) +
		podLives*(float64(2+s.PodUpdates+s.EventsPerPod)+s.DeleteConflicts) + perSecond(5*s.APIServers, s.OwnLeases)
}
