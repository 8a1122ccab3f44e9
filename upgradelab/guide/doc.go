// Package guide walks an operator through a real upgrade or downgrade, one member at a time:
// it says what to do on which host, waits until the cluster shows it was done (the gate), and
// stops with what to do, including the way back, when a gate does not pass in time. It changes
// the cluster only where a step needs it (moving leadership off the next member to stop,
// enabling a downgrade) and says so first. The gates (this file) are pure functions of what
// the members report (assess.Facts); guide.go is the loop.
//
// The files:
//
//	gates.go    the gates, pure functions of what the members report
//	guide.go    Run: the loop, one member at a time
//	replace.go  a member taken along by rolling replacement (learner, promote, remove)
package guide
