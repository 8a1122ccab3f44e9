package netns

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// reach says whether a process in the member's namespace can open a TCP connection to addr
// (bash's /dev/tcp, so the namespace needs no tools of its own).
func reach(t *testing.T, n *Net, member, addr string) bool {
	t.Helper()
	ns, err := n.Namespace(member)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "timeout", "2", "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", host, port))
	return cmd.Run() == nil
}

// A member's namespace reaches the harness over the hub; cutting its port drops it off the
// network, mending brings it back, and Close leaves no namespace behind.
func TestCutAndMend(t *testing.T) {
	if err := Available(); err != nil {
		if os.Getenv("E2E_NO_SKIP") != "" {
			t.Fatalf("E2E_NO_SKIP is set and %v", err)
		}
		t.Skipf("%v (CI runs as root)", err)
	}
	ctx := context.Background()
	n, err := New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			n.Close(ctx)
		}
	}()
	ln, err := net.Listen("tcp", net.JoinHostPort(n.HostIP().String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	addr, err := n.Add(ctx, "m1")
	if err != nil {
		t.Fatal(err)
	}
	if !n.subnet.Contains(addr) || addr == n.HostIP() {
		t.Fatalf("m1 got %v on %v (host %v)", addr, n.subnet, n.HostIP())
	}
	if _, err := n.Add(ctx, "m1"); err == nil {
		t.Fatal("a second m1 was added")
	}
	if !reach(t, n, "m1", ln.Addr().String()) {
		t.Fatal("m1 cannot reach the harness")
	}
	if err := n.Cut(ctx, "m1"); err != nil {
		t.Fatal(err)
	}
	if reach(t, n, "m1", ln.Addr().String()) {
		t.Fatal("m1 reached the harness while cut off")
	}
	if err := n.Mend(ctx, "m1"); err != nil {
		t.Fatal(err)
	}
	if !reach(t, n, "m1", ln.Addr().String()) {
		t.Fatal("m1 cannot reach the harness after the mend")
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	closed = true
	out, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(out), n.tag) {
		t.Fatalf("namespaces left after Close:\n%s", out)
	}
}
