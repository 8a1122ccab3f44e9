package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// catchupLimit bounds how long a new member may take to catch up.
const catchupLimit = 10 * time.Minute

type clusterResult struct {
	label                string
	put                  result
	rollWrites, rollFail int
	longestStall, maxLat time.Duration
	// slowestStop is the longest a member took to exit after SIGTERM during the restart.
	slowestStop time.Duration
	catchup     time.Duration
	catchupKeys int
}

func startCluster(label, bin string, n int) ([]*server, error) {
	ss := make([]*server, n)
	var ic []string
	for i := range ss {
		s, err := newServer(label, bin, fmt.Sprintf("c%d", i+1))
		if err != nil {
			return ss[:i], err
		}
		ss[i] = s
		ic = append(ic, s.Name+"="+s.PeerURL)
	}
	for _, s := range ss {
		s.InitialCluster = strings.Join(ic, ",")
		if err := s.Start(); err != nil {
			return ss, err
		}
	}
	for _, s := range ss {
		if err := s.waitHealthy(30 * time.Second); err != nil {
			return ss, err
		}
	}
	return ss, nil
}

func endpoints(ss []*server) []string {
	var eps []string
	for _, s := range ss {
		eps = append(eps, s.ClientURL)
	}
	return eps
}

func benchCluster(label, bin string, clients, conns, scale int, limit time.Duration, catchupBytes int64) (clusterResult, error) {
	res := clusterResult{label: label}
	ss, err := startCluster(label, bin, 3)
	defer func() {
		for _, s := range ss {
			if s != nil {
				s.stop()
			}
		}
	}()
	if err != nil {
		return res, err
	}
	eps := endpoints(ss)
	val := strings.Repeat("v", 256)
	ctx := context.Background()
	res.put, err = run(eps, conns, clients, 20000*scale, limit, func(ctx context.Context, c *clientv3.Client, i int) error {
		_, err := c.Put(ctx, fmt.Sprintf("bench/%08d", i), val)
		return err
	})
	if err != nil {
		return res, err
	}
	fmt.Printf("%-12s 3-member put: %.0f ops/s p99 %v\n", label, res.put.rate(), res.put.p99)

	// Rolling restart under 8 writers: failed requests and the longest gap between successes.
	cl, err := clientv3.New(clientv3.Config{Endpoints: endpoints(ss), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return res, err
	}
	defer cl.Close()
	stop := make(chan struct{})
	var mu sync.Mutex
	lastOK := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, err := cl.Put(cctx, fmt.Sprintf("roll/%d/%d", w, i), val)
				cancel()
				now := time.Now()
				mu.Lock()
				res.rollWrites++
				if err != nil {
					res.rollFail++
				} else {
					if gap := now.Sub(lastOK); gap > res.longestStall {
						res.longestStall = gap
					}
					lastOK = now
					if d := now.Sub(t0); d > res.maxLat {
						res.maxLat = d
					}
				}
				mu.Unlock()
			}
		}(w)
	}
	for _, s := range ss {
		time.Sleep(time.Second)
		t0 := time.Now()
		s.terminate()
		if d := time.Since(t0); d > res.slowestStop {
			res.slowestStop = d
		}
		if err := s.Start(); err != nil {
			close(stop)
			wg.Wait()
			return res, err
		}
		if err := s.waitHealthy(30 * time.Second); err != nil {
			close(stop)
			wg.Wait()
			return res, err
		}
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	fmt.Printf("%-12s rolling restart: %d writes, %d failed, longest stall %v, slowest stop %v\n", label, res.rollWrites, res.rollFail, res.longestStall, res.slowestStop)

	// Catch-up: load catchupBytes, add a member, time until it serves all of it.
	const valSize = 64 << 10
	n := int(catchupBytes / valSize)
	big := strings.Repeat("x", valSize)
	if _, err := run(eps, conns, 16, n, 30*time.Minute, func(ctx context.Context, c *clientv3.Client, i int) error {
		_, err := c.Put(ctx, fmt.Sprintf("catchup/%08d", i), big)
		return err
	}); err != nil {
		return res, err
	}
	res.catchupKeys = n
	nm, err := newServer(label, bin, "c4")
	if err != nil {
		return res, err
	}
	ss = append(ss, nm)
	if _, err := cl.MemberAdd(ctx, []string{nm.PeerURL}); err != nil {
		return res, fmt.Errorf("member add: %w", err)
	}
	nm.InitialCluster, nm.State = ss[0].InitialCluster+",c4="+nm.PeerURL, "existing"
	start := time.Now()
	if err := nm.Start(); err != nil {
		return res, err
	}
	nc, err := nm.NewClient()
	if err != nil {
		return res, err
	}
	defer nc.Close()
	deadline := time.Now().Add(catchupLimit)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		r, err := nc.Get(cctx, "catchup/", clientv3.WithPrefix(), clientv3.WithCountOnly(), clientv3.WithSerializable())
		cancel()
		if err == nil && r.Count >= int64(n) {
			break
		}
		if time.Now().After(deadline) {
			res.catchup = -1 // reported as not caught up within the limit
			fmt.Printf("%-12s new member did not catch up within %v (log in %s)\n", label, catchupLimit, nm.dir)
			return res, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	res.catchup = time.Since(start)
	fmt.Printf("%-12s new member caught up with %d MiB in %v\n", label, catchupBytes>>20, res.catchup)
	return res, nil
}

func writeClusterReport(b *strings.Builder, rows []clusterResult, catchupBytes int64) {
	fmt.Fprintf(b, "\n## Three-member cluster\n\n")
	fmt.Fprintf(b, "Same machine, three processes per implementation on loopback. The rolling restart sends SIGTERM to each member in turn under 8 writers (10s request timeout); the stall is the longest gap between two successful writes; the slowest stop is the longest a member took to exit after SIGTERM. Catch-up starts a member added with `member add` after loading %d MiB in 64 KiB values and ends when it serves every key (serializable count).\n\n", catchupBytes>>20)
	fmt.Fprintf(b, "| | put ops/s | put p99 | rolling restart writes | failed | longest write stall | max write latency | slowest stop | catch-up of %d MiB |\n|---|---|---|---|---|---|---|---|---|\n", catchupBytes>>20)
	for _, r := range rows {
		catchup := r.catchup.Round(100 * time.Millisecond).String()
		if r.catchup < 0 {
			catchup = "not within " + catchupLimit.String()
		}
		fmt.Fprintf(b, "| %s | %.0f | %v | %d | %d | %v | %v | %v | %s |\n", r.label, r.put.rate(), r.put.p99.Round(time.Microsecond),
			r.rollWrites, r.rollFail, r.longestStall.Round(time.Millisecond), r.maxLat.Round(time.Millisecond), r.slowestStop.Round(time.Millisecond), catchup)
	}
}
