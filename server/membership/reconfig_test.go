package membership

import (
	"errors"
	"testing"
)

// view says which peers of member 1 are connected (stream open long enough) and which are
// active (stream open, perhaps only just); a connected peer is active too.
func view(connected []uint64, active ...uint64) PeerView {
	in := func(ids []uint64) func(uint64) bool {
		return func(id uint64) bool {
			for _, x := range ids {
				if x == id {
					return true
				}
			}
			return false
		}
	}
	return PeerView{Self: 1, Connected: in(connected), Active: in(append(active, connected...))}
}

func voters(started ...bool) *Membership {
	st := State{}
	for i, s := range started {
		m := Member{ID: uint64(i + 1), PeerURLs: []string{"http://h"}}
		if s {
			m.Name = "m"
		}
		st.Members = append(st.Members, m)
	}
	st.Members = append(st.Members, Member{ID: 99, IsLearner: true, Name: "learner"})
	return FromState(st)
}

func TestCheckAdd(t *testing.T) {
	cases := []struct {
		name    string
		m       *Membership
		learner bool
		pv      PeerView
		want    error
	}{
		{"second member joins the first", voters(true), false, view(nil), nil},
		{"a learner joins a single voter", voters(true), true, view(nil), nil},
		{"healthy three", voters(true, true, true), false, view([]uint64{2, 3}), nil},
		{"two of three started: 2 < quorum of 4", voters(true, true, false), false, view([]uint64{2, 3}), ErrNotEnoughStartedMembers},
		{"a learner does not need the voters started", voters(true, true, false), true, view([]uint64{2, 3}), nil},
		{"three, one down: 2 < quorum of 4", voters(true, true, true), false, view([]uint64{2}), ErrUnhealthy},
		{"three, one down: a learner too", voters(true, true, true), true, view([]uint64{2}), ErrUnhealthy},
		{"three, one only just reconnected", voters(true, true, true), true, view([]uint64{2}, 3), ErrUnhealthy},
		{"four, one down: 3 = quorum of 5", voters(true, true, true, true), true, view([]uint64{2, 3}), nil},
		{"five, one down: 4 = quorum of 6", voters(true, true, true, true, true), true, view([]uint64{2, 3, 4}), nil},
		{"five, one down: a voter too", voters(true, true, true, true, true), false, view([]uint64{2, 3, 4}), nil},
		{"five, two down: 3 < quorum of 6", voters(true, true, true, true, true), true, view([]uint64{2, 3}), ErrUnhealthy},
	}
	for _, c := range cases {
		err := c.m.CheckAdd(c.learner, c.pv)
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	var ue *UnhealthyError
	if err := voters(true, true, true).CheckAdd(true, view([]uint64{2})); !errors.As(err, &ue) || ue.Connected != 2 || ue.Voters != 3 || err.Error() != "etcdserver: unhealthy cluster" {
		t.Errorf("unhealthy refusal %v", err)
	}
	if ErrNotEnoughStartedMembers.Error() != "etcdserver: re-configuration failed due to not enough started members" {
		t.Error("upstream's text")
	}
}

func TestCheckRemoveVoter(t *testing.T) {
	cases := []struct {
		name string
		m    *Membership
		id   uint64
		pv   PeerView
		want error
	}{
		{"healthy three, remove a follower", voters(true, true, true), 3, view([]uint64{2, 3}), nil},
		{"remove a member that is down", voters(true, true, true), 3, view([]uint64{2}), nil},
		{"remove the live one when another is down", voters(true, true, true), 2, view([]uint64{2}), ErrUnhealthy},
		{"remove self when a peer is down", voters(true, true, true), 1, view([]uint64{2}), ErrUnhealthy},
		{"the rest would not have started a quorum", voters(true, false, false), 1, view([]uint64{2, 3}), ErrNotEnoughStartedMembers},
		{"a member whose stream just reopened is not down", voters(true, true, true), 3, view([]uint64{2}, 3), ErrUnhealthy},
	}
	for _, c := range cases {
		err := c.m.CheckRemoveVoter(c.id, c.pv)
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
