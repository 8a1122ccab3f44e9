package etcdserver

import (
	"io"
	"log/slog"
	"testing"

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

// The leader's answer is what raft's own leader sends (a MsgReadIndexResp with the request's
// context), which a follower's raft turns into a read state; checked against raft's follower.
func TestForwardedReadAnswerIsRafts(t *testing.T) {
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
}
