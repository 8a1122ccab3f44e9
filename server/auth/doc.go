// Package auth holds v3 authentication as upstream etcd defines it: users with bcrypt
// passwords, roles with key-range permissions, the auth revision, and the tokens (simple or
// JWT) that name a caller. The state lives in the auth buckets (schema); this package keeps a
// copy in memory, applies the replicated requests to both, and answers permission questions.
//
// The files:
//
//	store.go  Store: users, roles, the auth revision, applied from raft; the permission checks
//	perms.go  key-range permissions as intervals
//	caller.go Info: the caller of a request and the auth revision it was checked at
//	tokens.go Tokens: simple tokens and the provider --auth-token describes
//	jwt.go    JWT tokens with upstream's claims
//	errors.go the auth errors, with upstream's texts
package auth
