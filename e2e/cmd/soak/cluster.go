package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/e2e/kubeload"
	"etcdx/upgradelab/cluster"
)

// etcdCluster is three members of one binary, started by the shared harness.
type etcdCluster struct{ *cluster.Cluster }

func startCluster(dir, bin string, extra []string) (*etcdCluster, error) {
	c, err := cluster.New(dir, 3, "soak")
	if err != nil {
		return nil, err
	}
	ec := &etcdCluster{c}
	for _, m := range c.Members {
		m.Bin, m.LogLevel, m.Extra = bin, "warn", extra
		if err := m.Start(); err != nil {
			return ec, err
		}
	}
	for _, m := range c.Members {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := m.WaitHealthy(ctx)
		cancel()
		if err != nil {
			return ec, fmt.Errorf("%s not healthy (log %s): %w", m.Name, m.LogPath, err)
		}
	}
	return ec, nil
}

func (c *etcdCluster) stop() { c.StopAll() }

// defragAll defragments each member in turn, as an operator's maintenance job does.
func (c *etcdCluster) defragAll(ctx context.Context) {
	for _, m := range c.Members {
		cl, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: 5 * time.Second})
		if err != nil {
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		if _, err := cl.Defragment(dctx, m.ClientURL); err != nil {
			fmt.Printf("defrag %s: %v\n", m.ClientURL, err)
		}
		cancel()
		cl.Close()
	}
}

// sample is one window's readings of a side: per member, then the load's figures.
type sample struct {
	At      time.Duration
	Members []memberReading
	Load    kubeload.Result
}

type memberReading struct {
	RSS, Goroutines, FDs, DBSize, DBInUse, WALFiles, SnapFiles int64
}

func (s sample) String() string {
	var b strings.Builder
	for _, m := range s.Members {
		fmt.Fprintf(&b, "[rss %.0fM g %d fd %d db %.0f/%.0fM wal %d snap %d] ", float64(m.RSS)/(1<<20), m.Goroutines, m.FDs,
			float64(m.DBInUse)/(1<<20), float64(m.DBSize)/(1<<20), m.WALFiles, m.SnapFiles)
	}
	ok, why := s.Load.Holds(kubeload.KubernetesSLO)
	fmt.Fprintf(&b, "mutating p99 %v", s.Load.Classes[kubeload.Mutating].P99.Round(time.Millisecond))
	if !ok {
		b.WriteString(" MISSES: " + why)
	}
	return b.String()
}

func (c *etcdCluster) sample(ctx context.Context, at time.Duration, res kubeload.Result) sample {
	s := sample{At: at, Load: res}
	for _, m := range c.Members {
		r := memberReading{
			RSS:       procStatus(m.Pid(), "VmRSS"),
			FDs:       countDir(fmt.Sprintf("/proc/%d/fd", m.Pid()), ""),
			WALFiles:  countDir(filepath.Join(m.DataDir, "member", "wal"), ".wal"),
			SnapFiles: countDir(filepath.Join(m.DataDir, "member", "snap"), ".snap"),
		}
		if mt, err := m.Metrics(ctx); err == nil {
			r.Goroutines = mt.Goroutines
		}
		if cl, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: 5 * time.Second}); err == nil {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if st, err := cl.Status(sctx, m.ClientURL); err == nil {
				r.DBSize, r.DBInUse = st.DbSize, st.DbSizeInUse
			}
			cancel()
			cl.Close()
		}
		s.Members = append(s.Members, r)
	}
	return s
}

// procStatus is a /proc/PID/status field in bytes (its kB figure).
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field+":" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// countDir counts the entries of dir whose names end with suffix ("" for all).
func countDir(dir, suffix string) int64 {
	es, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := int64(0)
	for _, e := range es {
		if strings.HasSuffix(e.Name(), suffix) {
			n++
		}
	}
	return n
}
