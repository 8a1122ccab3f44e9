// Package main will hold etcdutl, the offline data tool: backup, snapshot status/restore,
// migrate (storage version), defrag and hashkv on a stopped member's data directory.
package main
