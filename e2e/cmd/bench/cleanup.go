package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// A bench that is stopped (Ctrl-C, kill, a timeout) must not leave its members running, nor
// their data directories (gigabytes each in the kube part): every temporary directory of the
// run is made under one root, and a signal kills the members and removes it.

const tempRootPrefix = "bench-run-"

// underTempRoot makes the run's root and points TMPDIR at it (os.MkdirTemp("") then makes every
// member's directory there). done removes it at the run's normal end.
func underTempRoot() (done func(), err error) {
	root, err := os.MkdirTemp("", tempRootPrefix)
	if err != nil {
		return nil, fmt.Errorf("the run's temporary directory: %w", err)
	}
	if err := os.Setenv("TMPDIR", root); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		fmt.Fprintf(os.Stderr, "bench: %v: killing the members, removing %s\n", sig, root)
		killChildren()
		os.RemoveAll(root)
		os.Exit(128 + int(sig.(syscall.Signal)))
	}()
	return func() {
		signal.Stop(sigs)
		os.RemoveAll(root)
	}, nil
}

// killChildren kills every process this one started (the members), found by their parent in
// /proc: the parts hold them, not one list.
func killChildren() {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if parentOf(pid) == self {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// parentOf is a process's parent's pid from /proc/PID/stat (0 when unknown): the fields after
// the command name, which is in parentheses and may hold spaces, are its state, then its parent.
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}
