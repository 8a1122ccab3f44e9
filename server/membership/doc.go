// Package membership is the cluster's member list and the rules about it: member and cluster
// IDs, the membership stored in the backend and replicated through raft, the initial membership
// of a new cluster (from --initial-cluster or a discovery result), and the validation every
// member applies to a configuration change. The server, `etcdutl snapshot restore` and discovery
// bootstrap all build a new cluster's members here, so the IDs always agree with upstream's.
//
// The files:
//
//	member.go     Member, stored as upstream stores it
//	store.go      Membership: the replicated member list and the removed IDs
//	initial.go    a new cluster's members and IDs from --initial-cluster, as upstream computes
//	confchange.go the validation every member applies to a configuration change
//	reconfig.go   the strict reconfiguration checks (--strict-reconfig-check)
//	attrs.go      published attributes, with the server version upstream's decoder ignores
//	v2doc.go      the v2 store document raft snapshots carry
//	v2request.go  upstream 3.5's bare v2 requests for membership and the cluster version
//	v2view.go     a 3.5 member's membership in the v2 store, beside the v3 store's
package membership
