// Package workload is the traffic a plan runs under and the checks on what it saw: every
// acknowledged write must survive, and the history of reads and writes on a few registers must
// be linearizable (checked with porcupine).
//
// The files:
//
//	workload.go      the traffic and its history
//	observers.go     watchers and leases beside it, their verdict, a preload
//	availability.go  what the traffic saw per window, error classes
package workload
