package membership

import "errors"

// Strict reconfiguration (--strict-reconfig-check) refusals, with upstream's texts.
var (
	ErrNotEnoughStartedMembers = errors.New("etcdserver: re-configuration failed due to not enough started members")
	ErrUnhealthy               = errors.New("etcdserver: unhealthy cluster")
)

// UnhealthyError is ErrUnhealthy with the counts that caused it.
type UnhealthyError struct {
	Connected, Voters int
}

func (e *UnhealthyError) Error() string        { return ErrUnhealthy.Error() }
func (e *UnhealthyError) Is(target error) bool { return target == ErrUnhealthy }

// PeerView is what the member checking a change knows of its peers.
type PeerView struct {
	Self uint64
	// Connected reports a peer whose stream has been open long enough to count (upstream's
	// health interval); Active one whose stream is open at all.
	Connected, Active func(id uint64) bool
}

// connectedVoters counts the voters connected to the member checking (itself included), out of
// all voters.
func (m *Membership) connectedVoters(pv PeerView) (c, voters int) {
	for _, mem := range m.List() {
		if mem.IsLearner {
			continue
		}
		voters++
		if mem.ID == pv.Self || pv.Connected(mem.ID) {
			c++
		}
	}
	return c, voters
}

// startedVoters counts the voters other than except that have started, out of those voters.
func (m *Membership) startedVoters(except uint64) (started, voters int) {
	for _, mem := range m.List() {
		if mem.IsLearner || mem.ID == except {
			continue
		}
		voters++
		if mem.Started() {
			started++
		}
	}
	return started, voters
}

// CheckAdd is upstream's strict check before adding a member (3.5 to 3.7 alike). For a voter,
// the started voters must still be a quorum once the new, unstarted voter counts (a second member
// may always join a first). For a learner too, the member checking must be connected to a quorum
// of the voters with the new member counted as one that is not there: 3 voters with one down
// refuse, 4 or 5 with one down accept, 5 with two down refuse. A single voter always may add.
func (m *Membership) CheckAdd(learner bool, pv PeerView) error {
	if !learner {
		started, voters := m.startedVoters(0)
		voters++ // the new member, not started yet
		if !(started == 1 && voters == 2) && started < voters/2+1 {
			return ErrNotEnoughStartedMembers
		}
	}
	if c, v := m.connectedVoters(pv); v > 1 && c < (v+1)/2+1 {
		return &UnhealthyError{Connected: c, Voters: v}
	}
	return nil
}

// CheckRemoveVoter is upstream's strict check before removing voter id: the other started voters
// must be a quorum of what remains, and unless the member is down (no active stream), the
// connected voters without it must be too.
func (m *Membership) CheckRemoveVoter(id uint64, pv PeerView) error {
	started, voters := m.startedVoters(id)
	if started < voters/2+1 {
		return ErrNotEnoughStartedMembers
	}
	if id != pv.Self && !pv.Active(id) {
		return nil // a member that is down is always safe to remove
	}
	if c, v := m.connectedVoters(pv); c-1 < 1+(v-1)/2 {
		return &UnhealthyError{Connected: c, Voters: v}
	}
	return nil
}
