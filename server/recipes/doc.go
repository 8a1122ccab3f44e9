// Package recipes serves upstream's v3lock and v3election gRPC services (Lock, Unlock; Campaign,
// Proclaim, Leader, Observe, Resign), which non-Go clients such as jetcd call directly: locks and
// leader election built with the client library's concurrency recipes, run against this member's
// own KV, Lease and Watch API through a client connection to the member itself, as upstream
// builds them on its in-process client. Each call acts as its caller: the caller's credentials go
// along with every request the recipe makes.
//
// The files:
//
//	recipes.go  the Lock service, and what both services share
//	election.go the Election service
package recipes
