package etcdserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"etcdx/server/membership"
)

// Our members publish their server version with their attributes, so the cluster version is
// decided from replicated state. Upstream's members publish none: the leader asks each of them
// for its /version on the peer URL, as upstream's leader asks every member, and remembers the
// last answer, so a member that is down keeps its last known version (our rule) instead of
// holding up every decision.

// peerVersionTimeout bounds one /version request to a peer.
const peerVersionTimeout = 2 * time.Second

// peerVersions is the last /version answer of each member that publishes no version.
type peerVersions struct {
	mu    sync.Mutex
	known map[uint64]string
}

func (p *peerVersions) get(id uint64) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.known[id]
}

func (p *peerVersions) set(id uint64, v string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.known == nil {
		p.known = map[uint64]string{}
	}
	p.known[id] = v
}

// memberVersion is the server version a member runs, as far as this member knows: the one it
// published, or else the last one it answered on its peer URL.
func (s *Server) memberVersion(m membership.Member) string {
	if m.ServerVersion != "" {
		return m.ServerVersion
	}
	if m.ID == s.id {
		return s.cfg.release() // a 3.5 member publishes no version (as upstream 3.5): its own it knows
	}
	return s.peerVers.get(m.ID)
}

// pollPeerVersions asks every member that published no version for its /version, at once.
func (s *Server) pollPeerVersions() {
	var wg sync.WaitGroup
	for _, m := range s.mem.List() {
		if m.ID == s.id || m.ServerVersion != "" || len(m.PeerURLs) == 0 {
			continue
		}
		wg.Add(1)
		go func(m membership.Member) {
			defer wg.Done()
			v, err := s.fetchPeerVersion(m)
			if err != nil {
				s.log.Debug("failed to get version", "remote-member-id", fmt.Sprintf("%x", m.ID), "error", err)
				return
			}
			if old := s.peerVers.get(m.ID); old != v {
				s.log.Info("learned the server version of a member from its peer URL", "remote-member-id", fmt.Sprintf("%x", m.ID),
					"remote-member-version", v, "previous-version", old)
				s.peerVers.set(m.ID, v)
			}
		}(m)
	}
	wg.Wait()
}

func (s *Server) fetchPeerVersion(m membership.Member) (string, error) {
	var lastErr error
	for _, u := range m.PeerURLs {
		ctx, cancel := context.WithTimeout(context.Background(), peerVersionTimeout)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(u, "/")+"/version", nil)
		if err != nil {
			cancel()
			return "", err
		}
		resp, err := s.peerClient.Do(req)
		if err != nil {
			cancel()
			lastErr = err
			continue
		}
		var v struct {
			Server string `json:"etcdserver"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&v)
		resp.Body.Close()
		cancel()
		if err != nil || v.Server == "" {
			lastErr = fmt.Errorf("unreadable /version answer from %s: %v", u, err)
			continue
		}
		return v.Server, nil
	}
	return "", lastErr
}
