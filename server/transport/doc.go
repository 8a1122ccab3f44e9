// Package transport carries raft messages between members with upstream etcd's peer protocol
// (rafthttp), so an upstream 3.5 or 3.6 member and ours are peers of one another.
//
// Between every pair of members there are two long-lived streams in each direction, opened by
// the receiving side with GET /raft/stream/{msgapp,message}/<its ID>: the peer answers 200 and
// writes raft messages into the response for as long as it lasts (msgapp carries the leader's
// appends in the msgappv2 encoding, message everything else). When no stream is up, messages go
// as single POSTs to /raft (the pipeline); a snapshot and its database go as one POST to
// /raft/snapshot. Every request carries upstream's headers (cluster ID, sender, server version,
// minimum cluster version, peer URLs; recipient for streams) and is refused with upstream's
// status codes and texts. What is ours on top: the refusing side says why in a response header,
// which our members log together with both versions, and a peer that answers with no etcd
// protocol at all is reported as such.
//
// The files:
//
//	transport.go Transport: the peers, sending a member's messages, starting and stopping
//	peer.go      one remote member: its stream writers and readers and its pipeline
//	stream.go    the two stream types, their endpoints and names
//	codec.go     the two stream encodings (message, msgappv2), written piece by piece
//	handlers.go  the raft endpoints of the peer listener, the version checks, refusals logged once
//	snapshot.go  a snapshot message and its database sent on a request of its own
//	dial.go      peer requests over TCP or a unix socket
//	timeouts.go  --raft-read-timeout and --raft-write-timeout, upstream's defaults and floors
//	metrics.go   upstream's etcd_network_* families and the round-trip probes
package transport
