package cluster

import "syscall"

// dieWithParent makes the kernel kill the member when the process that started it ends.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
