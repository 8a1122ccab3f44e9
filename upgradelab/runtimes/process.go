package runtimes

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"etcdx/upgradelab/cluster"
	"etcdx/upgradelab/netns"
	"etcdx/upgradelab/plan"
)

// Process runs members as local processes. Members die with the lab (the kernel kills them
// when it ends), so a killed run leaves none behind. Plain, they share the host's loopback; on a
// network of namespaces (NewNetns), each has an address of its own and can be partitioned.
type Process struct {
	dir string
	lan *netns.Net // nil: loopback

	mu      sync.Mutex
	members []*processMember
}

// NewProcess keeps members' data under dir; members listen on loopback ports.
func NewProcess(dir string) *Process { return &Process{dir: dir} }

// NewNetns keeps members' data under dir and runs each member in a network namespace of its own
// on a private network, so that partition steps work without a Docker engine (root only).
func NewNetns(ctx context.Context, dir string) (*Process, error) {
	lan, err := netns.New(ctx)
	if err != nil {
		return nil, err
	}
	return &Process{dir: dir, lan: lan}, nil
}

// Name implements Runtime.
func (p *Process) Name() string {
	if p.lan != nil {
		return "netns"
	}
	return "process"
}

// Supports implements Runtime: on loopback, everything but network partitions, which need a
// network of the members' own.
func (p *Process) Supports(k plan.StepKind) error {
	if p.lan == nil && (k == plan.KindPartition || k == plan.KindHeal) {
		return fmt.Errorf("the process runtime cannot %s a member (members share the host's loopback); run with --runtime container, or --runtime netns as root", k)
	}
	return nil
}

// NewMember implements Runtime.
func (p *Process) NewMember(ctx context.Context, spec Spec) (Member, error) {
	m := &cluster.Member{Name: spec.Name, DataDir: filepath.Join(p.dir, spec.Name, "data"), LogPath: spec.LogPath, Token: spec.Token}
	var err error
	var failpoints string
	if p.lan != nil {
		addr, err := p.lan.Add(ctx, spec.Name)
		if err != nil {
			return nil, err
		}
		if m.Netns, err = p.lan.Namespace(spec.Name); err != nil {
			return nil, err
		}
		m.ClientURL, m.PeerURL = fmt.Sprintf("http://%s:2379", addr), fmt.Sprintf("http://%s:2380", addr)
		failpoints = fmt.Sprintf("http://%s:2381", addr)
	} else {
		if m.ClientURL, err = cluster.FreeURL(); err != nil {
			return nil, err
		}
		if m.PeerURL, err = cluster.FreeURL(); err != nil {
			return nil, err
		}
		if failpoints, err = cluster.FreeURL(); err != nil {
			return nil, err
		}
	}
	// A failpoint build serves its failpoints there (crash steps); other binaries ignore it.
	m.Env = append(m.Env, "GOFAIL_HTTP="+strings.TrimPrefix(failpoints, "http://"))
	pm := &processMember{m: m, spec: spec, lan: p.lan, failpoints: failpoints}
	p.mu.Lock()
	p.members = append(p.members, pm)
	p.mu.Unlock()
	return pm, nil
}

// HostIP implements Runtime: the host's loopback, or its leg on the members' network.
func (p *Process) HostIP() netip.Addr {
	if p.lan != nil {
		return p.lan.HostIP()
	}
	return netip.MustParseAddr("127.0.0.1")
}

// Close implements Runtime.
func (p *Process) Close(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.members {
		if err := m.m.Stop(20 * time.Second); err != nil {
			m.m.Kill()
		}
	}
	if p.lan != nil {
		return p.lan.Close(ctx)
	}
	return nil
}

type processMember struct {
	life
	m          *cluster.Member
	spec       Spec
	lan        *netns.Net
	failpoints string
}

func (m *processMember) Name() string       { return m.m.Name }
func (m *processMember) Failpoints() string { return m.failpoints }
func (m *processMember) ClientURL() string  { return m.m.ClientURL }
func (m *processMember) PeerURL() string    { return m.m.PeerURL }

// Seed implements Member: the data dir is on this machine.
func (m *processMember) Seed(_ context.Context, fill func(dataDir string) error) error {
	if m.m.Running() {
		return fmt.Errorf("seed %s: it is running", m.m.Name)
	}
	return fill(m.m.DataDir)
}

func (m *processMember) Start(_ context.Context, bin cluster.Binary) error {
	m.bin = bin
	m.m.InitialCluster, m.m.State = m.initialCluster, m.state
	m.m.Extra = m.spec.extra(bin)
	m.frozen = false
	return m.m.StartAs(bin.Path, bin.Level)
}

func (m *processMember) Stop(context.Context) error {
	m.frozen = false
	return m.m.Stop(30 * time.Second)
}

func (m *processMember) Kill(context.Context) error {
	m.frozen = false
	m.m.Kill()
	return nil
}

func (m *processMember) Freeze(context.Context) error {
	if !m.m.Running() {
		return fmt.Errorf("member %s is not running", m.m.Name)
	}
	m.m.Signal(syscall.SIGSTOP)
	m.frozen = true
	return nil
}

func (m *processMember) Thaw(context.Context) error {
	m.m.Signal(syscall.SIGCONT)
	m.frozen = false
	return nil
}

// Partition implements Member: on a network of namespaces, the member's port goes down (peers
// and clients lose it alike).
func (m *processMember) Partition(ctx context.Context) error { return m.cut(ctx, true) }

// Heal implements Member: the member's port comes back up, at the same address.
func (m *processMember) Heal(ctx context.Context) error { return m.cut(ctx, false) }

func (m *processMember) cut(ctx context.Context, off bool) error {
	kind, change := plan.KindHeal, (*netns.Net).Mend
	if off {
		kind, change = plan.KindPartition, (*netns.Net).Cut
	}
	if m.lan == nil {
		return (&Process{}).Supports(kind)
	}
	if err := change(m.lan, ctx, m.m.Name); err != nil {
		return err
	}
	m.partitioned = off
	return nil
}

func (m *processMember) Running(context.Context) bool { return m.m.Running() }

func (m *processMember) WaitHealthy(ctx context.Context) error { return m.m.WaitHealthy(ctx) }

func (m *processMember) WaitExit(ctx context.Context) error {
	ex := m.m.Exited()
	if ex == nil {
		return fmt.Errorf("member %s was never started", m.m.Name)
	}
	select {
	case <-ex:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("member %s still running: %w", m.m.Name, ctx.Err())
	}
}

func (m *processMember) Versions(ctx context.Context) (cluster.Versions, error) {
	return m.m.Versions(ctx)
}
func (m *processMember) Metrics(ctx context.Context) (cluster.Metrics, error) {
	return m.m.Metrics(ctx)
}
func (m *processMember) Log(context.Context) string { return m.m.Log() }
