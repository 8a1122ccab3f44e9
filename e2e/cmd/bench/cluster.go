package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// catchupLimit bounds how long a new member may take to catch up; one that does not is counted
// (and its round's catch-up time is the limit) instead of ending the bench.
const catchupLimit = 3 * time.Minute

func startCluster(label, bin string, n int, pprof bool) ([]*server, error) {
	return startClusterWith(label, bin, n, pprof)
}

// startClusterWith is startCluster with extra flags for every member.
func startClusterWith(label, bin string, n int, pprof bool, extra ...string) ([]*server, error) {
	ss := make([]*server, 0, n)
	var ic []string
	for i := 0; i < n; i++ {
		s, err := newServer(label, bin, fmt.Sprintf("c%d", i+1), pprof)
		if err != nil {
			return ss, err
		}
		s.Extra = append(s.Extra, extra...)
		ss = append(ss, s)
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

// startClusters starts a fresh three-member cluster of each subject, side by side, with an
// empty sample for each; stop ends every member started (also after an error).
func startClusters(subs []subject, pprof bool) (clusters [][]*server, smps map[string]sample, stop func(), err error) {
	smps = map[string]sample{}
	clusters = make([][]*server, len(subs))
	stop = func() {
		for _, ss := range clusters {
			for _, s := range ss {
				s.stop()
			}
		}
	}
	for i, sub := range subs {
		if clusters[i], err = startCluster(sub.label, sub.bin, 3, pprof); err != nil {
			return clusters, smps, stop, err
		}
		smps[sub.label] = newSample()
	}
	return clusters, smps, stop, nil
}

// clusterWorkloads run on a fresh three-member cluster, the clients spread over its members.
func clusterWorkloads(scale int) []workload {
	val := strings.Repeat("v", 256)
	keys := 20000 * scale
	return []workload{
		{name: "3 members: put (256 B values)", total: keys, op: func(ctx context.Context, c *clientv3.Client, i int) error {
			_, err := c.Put(ctx, fmt.Sprintf("bench/%08d", i), val)
			return err
		}},
		{name: "3 members: range, linearizable (1 key)", total: 2 * keys, op: func(ctx context.Context, c *clientv3.Client, i int) error {
			_, err := c.Get(ctx, fmt.Sprintf("bench/%08d", i%keys))
			return err
		}},
	}
}

// benchCluster starts a fresh three-member cluster of each implementation and runs the
// three-member workloads on them in pairs, as benchSingle does. With profDir set it saves each
// member's CPU profile of each workload.
func benchCluster(subs []subject, o options, profDir string) (map[string]sample, error) {
	clusters, smps, stop, err := startClusters(subs, profDir != "")
	defer stop()
	if err != nil {
		return smps, err
	}
	for wi, w := range clusterWorkloads(o.scale) {
		for _, i := range pairOrder(len(subs), wi) {
			r, err := measure(subs[i].label, clusters[i], w, o, profDir)
			if err != nil {
				return smps, err
			}
			smps[subs[i].label].results[w.name] = r
		}
	}
	return smps, nil
}

// benchAvailability starts a fresh three-member cluster, restarts its members in turn under
// writes, then has a new member catch up with o.catchupBytes.
func benchAvailability(label, bin string, o options) (sample, error) {
	smp := newSample()
	ss, err := startCluster(label, bin, 3, false)
	defer func() {
		for _, s := range ss {
			s.stop()
		}
	}()
	if err != nil {
		return smp, err
	}
	if err := rollingRestart(label, ss, smp); err != nil {
		return smp, err
	}
	nm, err := catchUp(label, bin, ss, o.catchupBytes, smp)
	if nm != nil {
		ss = append(ss, nm)
	}
	return smp, err
}

// rollingRestart sends SIGTERM to each member in turn under 8 writers and starts it again,
// recording failed writes, the longest gap between two successful writes and the slowest stop.
func rollingRestart(label string, ss []*server, smp sample) error {
	cl, err := clientv3.New(clientv3.Config{Endpoints: endpoints(ss), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cl.Close()
	val := strings.Repeat("v", 256)
	stop := make(chan struct{})
	var (
		lastOK               = time.Now()
		writes, failed       int
		longestStall, maxLat time.Duration
		slowestStop          time.Duration
		// stallEnd is when the longest stall ended; stops are when each SIGTERM was sent
		stallEnd time.Time
		stops    []time.Time
		leaders  []bool
	)
	wait := steady(8, 10*time.Second, stop, func(ctx context.Context, w, i int) error {
		_, err := cl.Put(ctx, fmt.Sprintf("roll/%d/%d", w, i), val)
		return err
	}, func(start, end time.Time, err error) {
		writes++
		if err != nil {
			failed++
			return
		}
		if end.Sub(lastOK) > longestStall {
			longestStall, stallEnd = end.Sub(lastOK), end
		}
		lastOK = end
		maxLat = max(maxLat, end.Sub(start))
	})
	var serr error
	for _, s := range ss {
		time.Sleep(time.Second)
		leaders = append(leaders, isLeader(cl, s.ClientURL))
		t0 := time.Now()
		stops = append(stops, t0)
		s.terminate()
		slowestStop = max(slowestStop, time.Since(t0))
		if serr = s.Start(); serr == nil {
			serr = s.waitHealthy(30 * time.Second)
		}
		if serr != nil {
			break
		}
	}
	time.Sleep(time.Second)
	close(stop)
	wait()
	if serr != nil {
		return serr
	}
	smp.values[figRollStall] = float64(longestStall)
	smp.values[figRollFailed] = float64(failed)
	smp.values[figRollMaxLat] = float64(maxLat)
	smp.values[figSlowestStop] = float64(slowestStop)
	fmt.Printf("%-12s rolling restart: %d writes, %d failed, longest stall %v (%s), max latency %v, slowest stop %v\n", label, writes, failed,
		longestStall.Round(time.Millisecond), stallAt(stallEnd.Add(-longestStall), stops, leaders), maxLat.Round(time.Millisecond), slowestStop.Round(time.Millisecond))
	return nil
}

// isLeader says whether the member serving url is the leader (false when it cannot tell).
func isLeader(cl *clientv3.Client, url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := cl.Status(ctx, url)
	return err == nil && st.Header.MemberId == st.Leader
}

// stallAt says when a stall that began at start happened: after which member's SIGTERM (the
// members in turn, and whether it was the leader then), or before the first.
func stallAt(start time.Time, stops []time.Time, leaders []bool) string {
	for i := len(stops) - 1; i >= 0; i-- {
		if !start.Before(stops[i]) {
			role := "a follower"
			if leaders[i] {
				role = "the leader"
			}
			return fmt.Sprintf("began %v after stopping member %d, %s", start.Sub(stops[i]).Round(time.Millisecond), i+1, role)
		}
	}
	return "began before the first stop"
}

// catchUp loads bytes in 64 KiB values, adds a member and times until it serves every key
// (a serializable count on the new member). It returns the new member for the caller to stop.
func catchUp(label, bin string, ss []*server, bytes int64, smp sample) (*server, error) {
	const valSize = 64 << 10
	n := int(bytes / valSize)
	big := strings.Repeat("x", valSize)
	eps := endpoints(ss)
	r, err := run(eps, 8, 16, n, 30*time.Minute, func(ctx context.Context, c *clientv3.Client, i int) error {
		_, err := c.Put(ctx, fmt.Sprintf("catchup/%08d", i), big)
		return err
	})
	if err == nil && r.errors > 0 {
		err = fmt.Errorf("loading the catch-up data: %d puts failed", r.errors)
	}
	if err != nil {
		return nil, err
	}
	nm, err := newServer(label, bin, "c4", false)
	if err != nil {
		return nil, err
	}
	nm.LogLevel = "info" // its log is kept when it does not catch up
	cl, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nm, err
	}
	defer cl.Close()
	ctx := context.Background()
	// The strict reconfiguration check refuses while a restarted member has been connected for
	// less than 5 s ("unhealthy cluster"), as upstream's does; wait it out.
	for tries := 0; ; tries++ {
		_, err := cl.MemberAdd(ctx, []string{nm.PeerURL})
		if err == nil {
			break
		}
		if tries == 30 || !strings.Contains(err.Error(), "unhealthy cluster") {
			return nm, fmt.Errorf("member add: %w", err)
		}
		time.Sleep(time.Second)
	}
	nm.InitialCluster, nm.State = ss[0].InitialCluster+",c4="+nm.PeerURL, "existing"
	start := time.Now()
	if err := nm.Start(); err != nil {
		return nm, err
	}
	nc, err := nm.NewClient()
	if err != nil {
		return nm, err
	}
	defer nc.Close()
	deadline := time.Now().Add(catchupLimit)
	var last string // the new member's last answer, for the report when it does not catch up
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		r, err := nc.Get(cctx, "catchup/", clientv3.WithPrefix(), clientv3.WithCountOnly(), clientv3.WithSerializable())
		cancel()
		if err == nil && r.Count >= int64(n) {
			break
		}
		if err != nil {
			last = "error: " + err.Error()
		} else {
			last = fmt.Sprintf("%d of %d keys", r.Count, n)
		}
		if time.Now().After(deadline) {
			kept := keepLog(nm, "catchup")
			fmt.Printf("%-12s the new member did not catch up within %v (last answer: %s; its log: %s)\n", label, catchupLimit, last, kept)
			smp.values[figCatchup] = float64(catchupLimit)
			smp.values[figCatchupStuck] = 1
			return nm, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(start)
	smp.values[figCatchup] = float64(took)
	smp.values[figCatchupStuck] = 0
	fmt.Printf("%-12s new member caught up with %d MiB in %v\n", label, bytes>>20, took.Round(100*time.Millisecond))
	return nm, nil
}

// keepLog copies a member's log out of its directory, which is removed when the member stops,
// and returns where it went (or why it could not).
func keepLog(s *server, what string) string {
	b, err := os.ReadFile(s.LogPath)
	if err != nil {
		return err.Error()
	}
	f, err := os.CreateTemp("", "bench-"+what+"-*.log")
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		return err.Error()
	}
	return f.Name()
}
