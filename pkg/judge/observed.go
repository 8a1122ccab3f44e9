package judge

// Checks a harness makes while it drives a cluster rather than on a recorded history, named here
// so the simulation, the lab and e2e report them alike.
const (
	// NotLinearizable: no order of the client operations explains what they saw (porcupine on
	// the register model, pkg/register).
	NotLinearizable Check = "not-linearizable"
	// MemberStartRefused: a member did not start on its own data dir after a stop, a crash or a
	// power cut that lost only what it had not synced.
	MemberStartRefused Check = "member-start-refused"
	// LearnerNotPromotable: a learner could not be promoted within the bound once the faults
	// ended.
	LearnerNotPromotable Check = "learner-not-promotable"
	// MembershipDrift: a member's two records of the membership (the v3 store's, the v2 store's)
	// disagree.
	MembershipDrift Check = "membership-drift"
)
