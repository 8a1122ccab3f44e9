package etcdserver

import (
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/transport"
)

// PeerNetwork is how a member reaches the other members: the raft transport and the HTTP client
// of its peer requests (lease forwarding, /members, hashkv, promote, versions). Real members use
// the network (NetworkPeers); the in-process simulation (package sim) gives every member an
// in-memory one with faults it controls.
type PeerNetwork interface {
	// Transport is the member's raft transport; cfg names the member and what receives.
	Transport(cfg transport.Config) PeerTransport
	// HTTPClient sends the member's peer requests, each bounded by timeout.
	HTTPClient(timeout time.Duration) *http.Client
}

// PeerTransport carries raft messages and snapshots to the other members (transport.Transport).
type PeerTransport interface {
	Send(msgs []raftpb.Message)
	SendSnapshot(m raftpb.Message, db io.ReadCloser)
	AddPeer(id uint64, urls []string)
	RemovePeer(id uint64)
	// ActiveSince is when the connection to a peer came up (zero: not connected); ActivePeers
	// counts connected peers.
	ActiveSince(id uint64) time.Time
	ActivePeers() int
	// Handler serves the peers' raft requests on the peer listener.
	Handler() http.Handler
	Collectors() []prometheus.Collector
	Stop()
}

// NetworkPeers reaches peers over TCP (or unix sockets) with upstream's rafthttp protocol, over
// TLS when the configuration has peer TLS: what every real member uses.
type NetworkPeers struct{ cfg *Config }

// Transport is transport.New.
func (n NetworkPeers) Transport(cfg transport.Config) PeerTransport { return transport.New(cfg) }

// HTTPClient dials peers, over TLS when peer TLS is configured.
func (n NetworkPeers) HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: transport.NewRoundTripper(5*time.Second, n.cfg.PeerTLS, n.cfg.PeerLocalAddr)}
}

// peers is the configured peer network, the real one by default.
func (c *Config) peers() PeerNetwork {
	if c.Peers != nil {
		return c.Peers
	}
	return NetworkPeers{cfg: c}
}
