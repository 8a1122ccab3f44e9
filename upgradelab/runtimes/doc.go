// Package runtimes runs the lab's members: as local processes (on loopback, or each in a network
// namespace of its own), or as containers on a private Docker network (through
// testcontainers-go). All give a member the same life: start with a binary, stop, kill -9,
// freeze and thaw, and (containers and namespaces) partition and heal, keeping its data across
// binary swaps.
//
// The files:
//
//	runtime.go     Runtime and Member: the life every runtime gives a member
//	process.go     members as local processes, on loopback or in network namespaces
//	docker.go      members as containers on a private network (testcontainers-go)
//	dockerseed.go  a data dir copied into a container's volume before its first start
//	imagefiles.go  the files of a member's image (the binary and what it links)
//	leftovers.go   containers, networks and namespaces a dead lab process left, removed
package runtimes
