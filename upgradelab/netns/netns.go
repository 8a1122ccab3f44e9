// Package netns gives local member processes a network of their own, so that one can be cut off
// from the others (a partition) without containers. Each member gets a Linux network namespace
// with one address; a hub namespace bridges them, and a veth leg from the host's namespace onto
// the bridge lets the harness (clients, health probes) reach every member. Cutting a member takes
// its port on the bridge down: peers and clients alike lose it, packets are dropped (no resets),
// and its address stays, as when a host drops off a switch.
//
// The bridge lives in a namespace of its own because the host's firewall (a Docker engine's
// FORWARD policy of DROP, applied to bridged traffic by br_netfilter) would drop traffic
// bridged in the host's namespace.
//
// It needs root and iproute2's ip command; Available says whether both are there.
package netns

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// prefix starts every namespace and interface name this package makes, followed by the owning
// process's pid, so that leftovers of a killed run can be told apart and removed.
const prefix = "ex"

// Available says why networks cannot be made here, or nil when they can.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("network namespaces need iproute2's ip command")
	}
	return nil
}

// Net is one private network: a hub, the host's leg on it and the members' namespaces.
type Net struct {
	tag    string // ex<pid>-<n>: the stem of every name below
	subnet netip.Prefix
	hostIP netip.Addr

	mu      sync.Mutex
	members map[string]*slot
	closed  bool
}

type slot struct {
	ns   string     // the member's namespace
	port string     // its veth end on the hub's bridge
	ip   netip.Addr // its address
}

var netCount atomic.Int64

// New makes a network on a /24 that no route of the host's uses. It removes what killed runs
// left behind first.
func New(ctx context.Context) (*Net, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	RemoveLeftovers(ctx)
	subnet, err := freeSubnet(ctx)
	if err != nil {
		return nil, err
	}
	n := &Net{tag: fmt.Sprintf("%s%d-%d", prefix, os.Getpid(), netCount.Add(1)), subnet: subnet,
		hostIP: subnet.Addr().Next(), members: map[string]*slot{}}
	hub, leg := n.tag+"-hub", n.tag+"h"
	steps := [][]string{
		{"netns", "add", hub},
		{"-n", hub, "link", "set", "lo", "up"},
		{"-n", hub, "link", "add", "br0", "type", "bridge"},
		{"-n", hub, "link", "set", "br0", "up"},
		{"link", "add", leg, "type", "veth", "peer", "name", "host", "netns", hub},
		{"-n", hub, "link", "set", "host", "master", "br0", "up"},
		{"addr", "add", netip.PrefixFrom(n.hostIP, 24).String(), "dev", leg},
		{"link", "set", leg, "up"},
	}
	for _, s := range steps {
		if err := ip(ctx, s...); err != nil {
			n.Close(context.Background())
			return nil, fmt.Errorf("make network %s: %w", n.tag, err)
		}
	}
	return n, nil
}

// HostIP is the harness's address on the network (the host's leg).
func (n *Net) HostIP() netip.Addr { return n.hostIP }

// Add gives a member a namespace and the next free address, and returns the address.
func (n *Net) Add(ctx context.Context, name string) (netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return netip.Addr{}, errors.New("network is closed")
	}
	if _, ok := n.members[name]; ok {
		return netip.Addr{}, fmt.Errorf("member %s is already on network %s", name, n.tag)
	}
	i := len(n.members) + 1
	addr := n.hostIP
	for k := 0; k < i; k++ {
		addr = addr.Next()
	}
	if !n.subnet.Contains(addr) || i > 200 {
		return netip.Addr{}, fmt.Errorf("network %s is full", n.tag)
	}
	s := &slot{ns: fmt.Sprintf("%s-%d", n.tag, i), port: fmt.Sprintf("p%d", i), ip: addr}
	hub := n.tag + "-hub"
	steps := [][]string{
		{"netns", "add", s.ns},
		{"-n", s.ns, "link", "set", "lo", "up"},
		{"-n", hub, "link", "add", s.port, "type", "veth", "peer", "name", "eth0", "netns", s.ns},
		{"-n", hub, "link", "set", s.port, "master", "br0", "up"},
		{"-n", s.ns, "addr", "add", netip.PrefixFrom(addr, 24).String(), "dev", "eth0"},
		{"-n", s.ns, "link", "set", "eth0", "up"},
	}
	for _, st := range steps {
		if err := ip(ctx, st...); err != nil {
			ip(context.Background(), "netns", "del", s.ns)
			return netip.Addr{}, fmt.Errorf("add %s to network %s: %w", name, n.tag, err)
		}
	}
	n.members[name] = s
	return addr, nil
}

// Namespace is the name of the member's namespace (for `ip netns exec`).
func (n *Net) Namespace(name string) (string, error) {
	s, err := n.slot(name)
	if err != nil {
		return "", err
	}
	return s.ns, nil
}

// Cut takes the member off the network: nothing reaches it and nothing it sends leaves.
func (n *Net) Cut(ctx context.Context, name string) error { return n.setPort(ctx, name, "down") }

// Mend puts the member back on the network at the same address.
func (n *Net) Mend(ctx context.Context, name string) error { return n.setPort(ctx, name, "up") }

func (n *Net) setPort(ctx context.Context, name, state string) error {
	s, err := n.slot(name)
	if err != nil {
		return err
	}
	if err := ip(ctx, "-n", n.tag+"-hub", "link", "set", s.port, state); err != nil {
		return fmt.Errorf("set %s's port %s: %w", name, state, err)
	}
	return nil
}

func (n *Net) slot(name string) (*slot, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	s, ok := n.members[name]
	if !ok {
		return nil, fmt.Errorf("member %s is not on network %s", name, n.tag)
	}
	return s, nil
}

// Close removes every namespace of the network (their veths go with them). Processes still
// running in a namespace keep it alive until they end, but unreachable.
func (n *Net) Close(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	var errs []error
	for _, s := range n.members {
		if err := ip(ctx, "netns", "del", s.ns); err != nil {
			errs = append(errs, err)
		}
	}
	n.members = map[string]*slot{}
	if err := ip(ctx, "netns", "del", n.tag+"-hub"); err != nil && !strings.Contains(err.Error(), "No such file") {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// RemoveLeftovers deletes the namespaces of networks whose owning process is gone.
func RemoveLeftovers(ctx context.Context) {
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], prefix) {
			continue
		}
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(f[0], prefix), "-", 2)[0])
		if err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		ip(ctx, "netns", "del", f[0])
	}
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// freeSubnet picks a /24 in 10.231.0.0/16 that no host route overlaps.
func freeSubnet(ctx context.Context) (netip.Prefix, error) {
	out, err := exec.CommandContext(ctx, "ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("list routes: %w", err)
	}
	var used []netip.Prefix
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		dst := f[0]
		if dst == "local" || dst == "broadcast" || dst == "unicast" {
			if len(f) < 2 {
				continue
			}
			dst = f[1]
		}
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		if p, err := netip.ParsePrefix(dst); err == nil {
			used = append(used, p)
		}
	}
	for third := 1 + os.Getpid()%200; third < 255+os.Getpid()%200; third++ {
		cand := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 231, byte(third % 255), 0}), 24)
		free := true
		for _, u := range used {
			if u.Overlaps(cand) {
				free = false
				break
			}
		}
		if free {
			return cand, nil
		}
	}
	return netip.Prefix{}, errors.New("no free /24 in 10.231.0.0/16")
}

func ip(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
