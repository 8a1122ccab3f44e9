// Package cli is the upgradelab command.
//
// The files:
//
//	cli.go     Main: run, plans, clean and the flags they share
//	assess.go  assess
//	guide.go   guide
//	matrix.go  the matrix file a campaign runs
package cli
