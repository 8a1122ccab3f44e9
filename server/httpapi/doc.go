// Package httpapi serves the HTTP endpoints of the client listener (/version, /health, /livez,
// /readyz, /metrics, /debug/vars and the gRPC JSON gateway under /v3/) and of the peer
// listener (the peer protocol and /version), each written against the small interface of the
// member it uses (member.go).
//
// The files:
//
//	httpapi.go   Handler (the client listener's HTTP side), PeerHandler, /version, /metrics,
//	             the gateway's JSON and its errors per level
//	health.go    /health, /livez and /readyz, each probe check on its own path
//	debugvars.go /debug/vars as upstream's binary fills it
//	member.go    what the handlers ask of the member (Health, RaftStatus, VersionSource)
package httpapi
