// Package discovery is the v3 discovery service: service (the HTTP token API), cli (the
// `discovery` command: serve, new, status, delete, version) and cmd/discovery (the binary). The
// protocol itself, the key layout and the client a new member uses to register and wait for its
// peers, is etcdx/server/discovery, so the server does not depend on this module.
package discovery
