package cluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// lockPortFile takes port p's lock file on a descriptor of its own, as another process would.
func lockPortFile(t *testing.T, p int) (*os.File, error) {
	t.Helper()
	if err := os.MkdirAll(portLockDir(), 0o777); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(portLockDir(), strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// TestFreePortSkipsPortsOtherProcessesHold: a port whose lock file another holder has (a
// concurrent lab run whose member is down for a restart) is skipped although nothing listens
// on it, and a port handed out is held until the process ends.
func TestFreePortSkipsPortsOtherProcessesHold(t *testing.T) {
	p, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if f, err := lockPortFile(t, p); err == nil {
		f.Close()
		t.Fatalf("port %d was handed out but its lock file is free", p)
	}
	// The next port nothing listens on and no one holds, now held by "another process".
	held, f := p+1, (*os.File)(nil)
	for ; held < portHigh && f == nil; held++ {
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", held)); err == nil {
			l.Close()
			f, _ = lockPortFile(t, held)
		}
	}
	held--
	if f == nil {
		t.Fatalf("no port above %d to hold", p)
	}
	defer f.Close()
	nextPort.Store(int64(held - 1))
	q, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if q == held {
		t.Fatalf("FreePort handed out port %d, which another holder has", held)
	}
}
