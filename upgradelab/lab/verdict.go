package lab

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"etcdx/pkg/judge"
)

// Findings are what the end-of-run checks gathered from the cluster and the workload; Judge
// turns them into the run's verdict.
type Findings struct {
	// Problems are the workload's own checks (watch, revisions, leases, ...).
	Problems []string
	// Hashes are the members' hashes at one revision; HashErr, why they could not be read.
	Hashes  map[string]judge.MemberHash
	HashErr error
	// Lost are acknowledged writes missing or changed (at most a few named); LostErr, why the
	// ledger could not be read back.
	Lost    []string
	LostErr error
	// Linearizable is porcupine's answer for HistoryOps register operations, within Timeout.
	Linearizable porcupine.CheckResult
	HistoryOps   int
	Timeout      time.Duration
}

// Judge is the run's verdict on its findings: nil when every check passed, otherwise every
// failed check, one per line. It reads nothing else and decides nothing else.
func Judge(f Findings) error {
	var errs []error
	for _, p := range f.Problems {
		errs = append(errs, errors.New(p))
	}
	if f.HashErr != nil {
		errs = append(errs, f.HashErr)
	} else {
		for _, p := range judge.Hashes(f.Hashes) {
			errs = append(errs, errors.New(p.String()))
		}
	}
	if f.LostErr != nil {
		errs = append(errs, f.LostErr)
	} else if len(f.Lost) > 0 {
		errs = append(errs, fmt.Errorf("%d acknowledged writes lost, e.g. %s", len(f.Lost), strings.Join(f.Lost, ", ")))
	}
	switch f.Linearizable {
	case porcupine.Ok:
	case porcupine.Illegal:
		errs = append(errs, fmt.Errorf("the history of %d register operations is not linearizable", f.HistoryOps))
	case porcupine.Unknown:
		errs = append(errs, fmt.Errorf("the linearizability check of %d operations did not finish within %v", f.HistoryOps, f.Timeout))
	default:
		errs = append(errs, fmt.Errorf("the linearizability check gave no answer (%q)", f.Linearizable))
	}
	return errors.Join(errs...)
}
