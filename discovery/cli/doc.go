// Package cli is the discovery command: `serve` runs the discovery service (an etcd member of
// ours holding the tokens, or an existing etcd cluster, plus the token API), and `new`, `status`
// and `delete` manage tokens directly in any etcd cluster that serves discovery.
//
// The files:
//
//	cli.go    Main: the flags, the token commands (new, status, delete) on any etcd cluster
//	serve.go  serve: the discovery service, on a member of ours or on an existing cluster
package cli
