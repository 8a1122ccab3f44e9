// Package pkg holds small leaf packages that several binaries share and that depend on nothing
// of ours: buildinfo (what a binary was built as) and table (the bordered tables upstream's CLIs
// print). Keeping them out of the server module lets etcdctl and etcdutl print versions and tables
// without pulling in the server.
package pkg
