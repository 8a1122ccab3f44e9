package etcdserver

import (
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/quorum"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
)

func TestPairQuorum(t *testing.T) {
	status := func(state raft.StateType, term uint64, voters, outgoing []uint64, learners ...uint64) raft.Status {
		var st raft.Status
		st.ID = 1
		st.Term = term
		st.RaftState = state
		st.Config = tracker.Config{Voters: quorum.JointConfig{quorum.MajorityConfig{}, nil}}
		for _, id := range voters {
			st.Config.Voters[0][id] = struct{}{}
		}
		if outgoing != nil {
			st.Config.Voters[1] = quorum.MajorityConfig{}
			for _, id := range outgoing {
				st.Config.Voters[1][id] = struct{}{}
			}
		}
		if len(learners) > 0 {
			st.Config.Learners = map[uint64]struct{}{}
			for _, id := range learners {
				st.Config.Learners[id] = struct{}{}
			}
		}
		return st
	}
	three := []uint64{1, 2, 3}
	tests := []struct {
		name       string
		st         raft.Status
		commitTerm uint64
		from       uint64
		want       bool
	}{
		{"three voters, a voter asks", status(raft.StateLeader, 5, three, nil), 5, 2, true},
		{"two voters, the other asks", status(raft.StateLeader, 5, []uint64{1, 2}, nil), 5, 2, true},
		{"three voters and a learner, a voter asks", status(raft.StateLeader, 5, three, nil, 4), 5, 3, true},
		{"nothing of this term committed yet", status(raft.StateLeader, 5, three, nil), 4, 2, false},
		{"a follower (it forwards, raft's job)", status(raft.StateFollower, 5, three, nil), 5, 2, false},
		{"a candidate", status(raft.StateCandidate, 5, three, nil), 5, 2, false},
		{"four voters: two are no quorum", status(raft.StateLeader, 5, []uint64{1, 2, 3, 4}, nil), 5, 2, false},
		{"five voters", status(raft.StateLeader, 5, []uint64{1, 2, 3, 4, 5}, nil), 5, 2, false},
		{"a learner asks", status(raft.StateLeader, 5, three, nil, 4), 5, 4, false},
		{"a stranger asks", status(raft.StateLeader, 5, three, nil), 5, 9, false},
		{"the leader itself", status(raft.StateLeader, 5, three, nil), 5, 1, false},
		{"joint configuration", status(raft.StateLeader, 5, three, []uint64{1, 2}), 5, 2, false},
		{"leader not a voter of its configuration", status(raft.StateLeader, 5, []uint64{2, 3}, nil), 5, 2, false},
		{"term zero", status(raft.StateLeader, 0, three, nil), 0, 2, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pairQuorum(tc.st, tc.commitTerm, tc.from); got != tc.want {
				t.Fatalf("pairQuorum = %v, want %v", got, tc.want)
			}
		})
	}
}

// The pair's messages are raft's own leader's: a MsgReadIndexResp with the request's context,
// which a follower's raft turns into a read state, and a heartbeat it answers with the round's
// context; checked against raft's follower itself.
func TestPairMessagesAreRafts(t *testing.T) {
	storage := raft.NewMemoryStorage()
	if err := storage.ApplySnapshot(raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{
		Index: 1, Term: 1, ConfState: raftpb.ConfState{Voters: []uint64{1, 2, 3}}}}); err != nil {
		t.Fatal(err)
	}
	rn, err := raft.NewRawNode(&raft.Config{ID: 2, ElectionTick: 10, HeartbeatTick: 1, Storage: storage,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 16, Logger: raftLogger{slog.New(slog.NewTextHandler(io.Discard, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	// The follower learns of leader 1 in term 3 by a heartbeat, as it would.
	if err := rn.Step(raftpb.Message{Type: raftpb.MsgHeartbeat, From: 1, To: 2, Term: 3, Commit: 1}); err != nil {
		t.Fatal(err)
	}
	// The follower forwards a read to its leader as raft does ...
	ctx := []byte{0, 0, 0, 0, 0, 0, 0, 42}
	rn.ReadIndex(ctx)
	var req raftpb.Message
	for _, m := range rn.Ready().Messages {
		if m.Type == raftpb.MsgReadIndex {
			req = m
		}
	}
	if req.To != 1 || len(req.Entries) != 1 {
		t.Fatalf("forwarded read %+v, want a MsgReadIndex to 1 with the context", req)
	}
	rn.Advance(raft.Ready{})
	// ... and leader 1 answers it at once.
	var st raft.Status
	st.ID, st.Term, st.Commit, st.RaftState = 1, 3, 1, raft.StateLeader
	if err := rn.Step(forwardedReadAnswer(st, req)); err != nil {
		t.Fatal(err)
	}
	rd := rn.Ready()
	if len(rd.ReadStates) != 1 || rd.ReadStates[0].Index != 1 || string(rd.ReadStates[0].RequestCtx) != string(ctx) {
		t.Fatalf("read states %+v, want one at index 1 with the request's context", rd.ReadStates)
	}
	rn.Advance(rd)

	// A leader's own round: its heartbeat, answered in the leader's term with the context, and
	// no commit index taken from it.
	round := []byte{0, 0, 0, 0, 0, 0, 0, 43}
	if err := rn.Step(pairHeartbeat(1, 2, 3, round)); err != nil {
		t.Fatal(err)
	}
	rd = rn.Ready()
	var resp raftpb.Message
	for _, m := range rd.Messages {
		if m.Type == raftpb.MsgHeartbeatResp {
			resp = m
		}
	}
	if resp.To != 1 || resp.Term != 3 || string(resp.Context) != string(round) {
		t.Fatalf("answer %+v, want a MsgHeartbeatResp to 1 in term 3 with the round's context", resp)
	}
	if st := rn.Status(); st.Commit != 1 {
		t.Fatalf("commit %d after the round's heartbeat, want 1 as before", st.Commit)
	}
}

// The follower asked first is the one most likely to answer at once.
func TestPairFollowers(t *testing.T) {
	st := func(progress map[uint64]tracker.Progress) raft.Status {
		var s raft.Status
		s.ID = 1
		s.Config = tracker.Config{Voters: quorum.JointConfig{quorum.MajorityConfig{1: {}, 2: {}, 3: {}}, nil}}
		s.Progress = map[uint64]tracker.Progress{}
		for id, pr := range progress {
			s.Progress[id] = pr
		}
		return s
	}
	replicate := func(match uint64, active bool) tracker.Progress {
		return tracker.Progress{Match: match, State: tracker.StateReplicate, RecentActive: active}
	}
	tests := []struct {
		name string
		st   raft.Status
		want []uint64
	}{
		{"furthest along first", st(map[uint64]tracker.Progress{2: replicate(5, true), 3: replicate(9, true)}), []uint64{3, 2}},
		{"recently heard from before further along", st(map[uint64]tracker.Progress{2: replicate(5, true), 3: replicate(9, false)}), []uint64{2, 3}},
		{"replicated to before probed", st(map[uint64]tracker.Progress{2: replicate(5, true), 3: {Match: 9, State: tracker.StateProbe, RecentActive: true}}), []uint64{2, 3}},
		{"ties by ID", st(map[uint64]tracker.Progress{2: replicate(7, true), 3: replicate(7, true)}), []uint64{2, 3}},
		{"no progress known last", st(map[uint64]tracker.Progress{3: replicate(1, true)}), []uint64{3, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pairFollowers(tc.st); !slices.Equal(got, tc.want) {
				t.Fatalf("pairFollowers = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPairEscalate(t *testing.T) {
	for _, tc := range []struct{ rtt, want time.Duration }{
		{0, pairEscalateMin},
		{100 * time.Microsecond, pairEscalateMin},
		{2 * time.Millisecond, 6 * time.Millisecond},
		{time.Second, pairEscalateMax},
	} {
		if got := pairEscalate(tc.rtt); got != tc.want {
			t.Errorf("pairEscalate(%v) = %v, want %v", tc.rtt, got, tc.want)
		}
	}
}
