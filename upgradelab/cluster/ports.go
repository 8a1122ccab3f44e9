package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
)

// Ports come from below the kernel's ephemeral range (32768 and up here), so outgoing
// connections, which take ephemeral ports, cannot grab one between allocation and use.
const (
	portLow  = 20000
	portHigh = 32000
)

var nextPort atomic.Int64

// reservations holds, for the life of the process, an flock on a file per port this process
// handed out (in portLockDir). Another process (a concurrent lab run, a test binary) skips a
// port whose file is locked, even in the moment its member is down between a stop and a restart
// on the same port, when probing it alone would find it free. The kernel drops the locks when
// the process ends, however it ends.
var reservations struct {
	sync.Mutex
	files []*os.File
}

// portLockDir holds the ports' lock files, shared by every process of the machine.
func portLockDir() string { return filepath.Join(os.TempDir(), "etcdx-ports") }

// reserve takes port p for this process, or says another process holds it. Where the lock
// files cannot be made, the probe of FreePort alone decides.
func reserve(p int) bool {
	dir := portLockDir()
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return true
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false
	}
	reservations.Lock()
	reservations.files = append(reservations.files, f)
	reservations.Unlock()
	return true
}

// FreePort returns a loopback port below the ephemeral range that is free now, has not been
// handed out before by this process, and is not held by another process's FreePort.
func FreePort() (int, error) {
	nextPort.CompareAndSwap(0, int64(portLow+rand.IntN(2000)))
	for i := 0; i < portHigh-portLow; i++ {
		p := int(nextPort.Add(1))
		if p >= portHigh {
			nextPort.Store(portLow)
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		if !reserve(p) {
			continue
		}
		return p, nil
	}
	return 0, errors.New("no free port below the ephemeral range")
}

// FreeURL is http://127.0.0.1:<FreePort>.
func FreeURL() (string, error) {
	p, err := FreePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("http://127.0.0.1:%d", p), nil
}
