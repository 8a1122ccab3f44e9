// Package v2http serves upstream etcd 3.5's v2 client API on a 3.5 member started with
// --enable-v2: /v2/keys (reads from the member's v2 store, writes and quorum reads through raft),
// /v2/members, /v2/machines, /v2/stats and /v2/auth, with upstream's paths, parameters, status
// codes, headers and JSON bodies. It reaches the member through the small Server interface.
//
// The files:
//
//	http.go    Register: the paths, the member the API asks (Server), options
//	keys.go    /v2/keys: reads, watches, writes and quorum reads
//	members.go /v2/members, /v2/machines and the leader
//	auth.go    /v2/auth and who a request speaks for
//	stats.go   /v2/stats/self, /v2/stats/leader and /v2/stats/store
package v2http
