// Package membership is the cluster's member list and the rules about it: member and cluster
// IDs, the membership stored in the backend and replicated through raft, the initial membership
// of a new cluster (from --initial-cluster or a discovery result), and the validation every
// member applies to a configuration change. The server, `etcdutl snapshot restore` and discovery
// bootstrap all build a new cluster's members here, so the IDs always agree with upstream's.
package membership
