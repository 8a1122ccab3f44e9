// Package releases is what the lab knows about upstream etcd's releases: each minor line's
// newest patch and the patch from which the next minor may be entered, the flags each minor
// removed, and the known upgrade blockers with the versions they affect, their consequence,
// their fix and their sources. The knowledge is data (knowledge.yaml), checked by tests; the
// rules that read it (which hops a path takes) live beside it.
//
// The files:
//
//	releases.go  the knowledge (knowledge.yaml) and versions
//	path.go      the hops a path takes
package releases
