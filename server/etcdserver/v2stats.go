package etcdserver

import (
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// peerStats is what upstream's /v2/stats/self and /v2/stats/leader report, counted from the raft
// messages this member sends and receives: append requests with their rates over the last
// second, and, while it leads, each follower's heartbeat round trips and failed sends. Only a 3.5
// member, which serves the v2 API, keeps them (nil otherwise: no cost on the raft loop).
type peerStats struct {
	mu        sync.Mutex
	start     time.Time
	leadSince time.Time
	lead      uint64
	recv      rateWindow
	sent      rateWindow
	recvCount uint64
	sentCount uint64
	followers map[uint64]*followerStats
}

// rateWindow keeps the sizes and times of the messages of the last second.
type rateWindow struct {
	at    []time.Time
	bytes []int
}

func (w *rateWindow) add(now time.Time, n int) {
	w.at, w.bytes = append(w.at, now), append(w.bytes, n)
	w.trim(now)
}

func (w *rateWindow) trim(now time.Time) {
	i := 0
	for i < len(w.at) && now.Sub(w.at[i]) > time.Second {
		i++
	}
	w.at, w.bytes = w.at[i:], w.bytes[i:]
}

// rate is messages and bytes per second over the last second.
func (w *rateWindow) rate(now time.Time) (float64, float64) {
	w.trim(now)
	total := 0
	for _, b := range w.bytes {
		total += b
	}
	return float64(len(w.at)), float64(total)
}

type followerStats struct {
	heartbeatSent          time.Time
	current, min, max, sum float64 // milliseconds
	sumSq                  float64
	success, fail          uint64
}

func newPeerStats(now time.Time) *peerStats {
	return &peerStats{start: now, leadSince: now, followers: map[uint64]*followerStats{}}
}

func (p *peerStats) follower(id uint64) *followerStats {
	f := p.followers[id]
	if f == nil {
		f = &followerStats{min: math.MaxFloat64}
		p.followers[id] = f
	}
	return f
}

// received counts a message from a peer.
func (p *peerStats) received(m raftpb.Message, now time.Time) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch m.Type {
	case raftpb.MsgApp:
		p.recvCount++
		p.recv.add(now, m.Size())
	case raftpb.MsgHeartbeatResp:
		f := p.follower(m.From)
		if f.heartbeatSent.IsZero() {
			return
		}
		ms := float64(now.Sub(f.heartbeatSent)) / float64(time.Millisecond)
		f.heartbeatSent = time.Time{}
		f.success++
		f.current, f.sum, f.sumSq = ms, f.sum+ms, f.sumSq+ms*ms
		f.min, f.max = math.Min(f.min, ms), math.Max(f.max, ms)
	}
}

// sending counts the messages this member hands to the transport.
func (p *peerStats) sending(msgs []raftpb.Message, now time.Time) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range msgs {
		switch m.Type {
		case raftpb.MsgApp:
			p.sentCount++
			p.sent.add(now, m.Size())
		case raftpb.MsgHeartbeat:
			if f := p.follower(m.To); f.heartbeatSent.IsZero() {
				f.heartbeatSent = now
			}
		}
	}
}

// unreachable counts a failed send to a peer.
func (p *peerStats) unreachable(id uint64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.follower(id)
	f.fail++
	f.heartbeatSent = time.Time{}
}

// leaderChanged starts the leader's uptime and, for a new leader of its own, fresh follower figures.
func (p *peerStats) leaderChanged(lead uint64, now time.Time) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lead, p.leadSince = lead, now
	p.followers = map[uint64]*followerStats{}
}

// V2SelfStats is the body of GET /v2/stats/self, with upstream's field names.
func (s *Server) V2SelfStats() []byte {
	p := s.peerStats
	if p == nil {
		return nil
	}
	now := time.Now()
	p.mu.Lock()
	out := struct {
		Name       string    `json:"name"`
		ID         string    `json:"id"`
		State      string    `json:"state"`
		StartTime  time.Time `json:"startTime"`
		LeaderInfo struct {
			Leader    string    `json:"leader"`
			Uptime    string    `json:"uptime"`
			StartTime time.Time `json:"startTime"`
		} `json:"leaderInfo"`
		RecvAppendRequestCnt uint64  `json:"recvAppendRequestCnt"`
		RecvPkgRate          float64 `json:"recvPkgRate,omitempty"`
		RecvBandwidthRate    float64 `json:"recvBandwidthRate,omitempty"`
		SendAppendRequestCnt uint64  `json:"sendAppendRequestCnt"`
		SendPkgRate          float64 `json:"sendPkgRate,omitempty"`
		SendBandwidthRate    float64 `json:"sendBandwidthRate,omitempty"`
	}{Name: s.cfg.Name, ID: fmt.Sprintf("%x", s.id), StartTime: p.start,
		RecvAppendRequestCnt: p.recvCount, SendAppendRequestCnt: p.sentCount}
	out.LeaderInfo.Leader = fmt.Sprintf("%x", p.lead)
	out.LeaderInfo.StartTime = p.leadSince
	out.LeaderInfo.Uptime = now.Sub(p.leadSince).String()
	out.RecvPkgRate, out.RecvBandwidthRate = p.recv.rate(now)
	out.SendPkgRate, out.SendBandwidthRate = p.sent.rate(now)
	p.mu.Unlock()
	out.State = raft.StateFollower.String()
	if s.node != nil {
		out.State = s.node.Status().RaftState.String()
	}
	b, _ := json.Marshal(out)
	return b
}

// V2LeaderStats is the body of GET /v2/stats/leader; nil when this member does not lead.
func (s *Server) V2LeaderStats() []byte {
	if s.Leader() != s.id || s.peerStats == nil {
		return nil
	}
	type latency struct {
		Current           float64 `json:"current"`
		Average           float64 `json:"average"`
		StandardDeviation float64 `json:"standardDeviation"`
		Minimum           float64 `json:"minimum"`
		Maximum           float64 `json:"maximum"`
	}
	type counts struct {
		Fail    uint64 `json:"fail"`
		Success uint64 `json:"success"`
	}
	type follower struct {
		Latency latency `json:"latency"`
		Counts  counts  `json:"counts"`
	}
	out := struct {
		Leader    string              `json:"leader"`
		Followers map[string]follower `json:"followers"`
	}{Leader: fmt.Sprintf("%x", s.id), Followers: map[string]follower{}}
	p := s.peerStats
	p.mu.Lock()
	for _, m := range s.mem.List() {
		if m.ID == s.id {
			continue
		}
		f := p.follower(m.ID)
		fo := follower{Counts: counts{Fail: f.fail, Success: f.success}}
		if f.success > 0 {
			n := float64(f.success)
			avg := f.sum / n
			fo.Latency = latency{Current: f.current, Average: avg, Minimum: f.min, Maximum: f.max,
				StandardDeviation: math.Sqrt(math.Max(0, f.sumSq/n-avg*avg))}
		}
		out.Followers[fmt.Sprintf("%x", m.ID)] = fo
	}
	p.mu.Unlock()
	b, _ := json.Marshal(out)
	return b
}
