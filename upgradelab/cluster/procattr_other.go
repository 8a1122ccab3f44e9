//go:build !linux

package cluster

import "syscall"

// dieWithParent has no portable form outside Linux: members outlive a killed harness there.
func dieWithParent() *syscall.SysProcAttr { return nil }
