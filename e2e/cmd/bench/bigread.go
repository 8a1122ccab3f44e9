package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"etcdx/pkg/rangestream"
)

// The big-read part's figures.
const (
	figStreamPeak   = "rangestream-peak"
	figPagedPeak    = "paged-range-peak"
	figUnaryPeak    = "unary-range-peak"
	figPagedListDur = "paged-list-took"
)

// bigReadObjects and bigReadValue make the big-read part's data: 100,000 objects of 10 KiB,
// about 1 GiB, as a large Kubernetes resource list.
const (
	bigReadObjects = 100000
	bigReadValue   = 10 << 10
	bigReadPage    = 500 // kube-apiserver's page size for a paginated LIST
)

// benchBigRead writes o.bigReadObjects objects on a fresh member, restarts it (so what the
// writes left in memory is gone) and reads them all three ways, each once, measuring how much the
// member's peak resident memory (VmHWM, reset through /proc/PID/clear_refs before each) grows
// above its resident memory just before: RangeStream (3.7's chunked range), a paginated Range as
// kube-apiserver lists (pages of 500 at the first page's revision, each asking for the count
// left), and one unary Range of everything (the request that runs members out of memory). The
// paginated list's time is its throughput figure. With profDir set it saves the member's CPU
// profile of each read there.
func benchBigRead(label, bin string, o options, profDir string) (sample, error) {
	smp := newSample()
	n := o.bigReadObjects
	// A short raft log in memory, so the restarted member holds little besides its database.
	s, err := startServerWith(label, bin, profDir != "", nil, "--quota-backend-bytes", fmt.Sprint(int64(8)<<30), "--snapshot-count", "1000")
	if err != nil {
		return smp, err
	}
	defer s.stop()
	if err := loadIn([]string{s.ClientURL}, "objects/%09d", n, strings.Repeat("o", bigReadValue), 10); err != nil {
		return smp, err
	}
	s.terminate()
	if err = s.Start(); err == nil {
		err = s.waitHealthy(2 * time.Minute)
	}
	if err != nil {
		return smp, fmt.Errorf("restart: %w", err)
	}
	// Let what the start-up's replay left behind go back to the system first: the figures are
	// what the reads add. Bounded: at most 20 s, done once anonymous memory stops falling.
	for i, last := 0, int64(-1); i < 20; i++ {
		anon, _ := s.residentParts()
		if last >= 0 && anon >= last {
			break
		}
		last = anon
		time.Sleep(time.Second)
	}
	cs, closeAll, err := newClients([]string{s.ClientURL}, 1)
	if err != nil {
		return smp, err
	}
	defer closeAll()
	cl := cs[0]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// measure runs read and returns how far the member's peak resident memory rose above its
	// resident memory when read began.
	measure := func(what string, read func() (int, error)) (int64, error) {
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.Pid()), []byte("5"), 0); err != nil {
			return 0, fmt.Errorf("reset the peak resident memory: %w", err)
		}
		_, base := s.memory()
		anon0, file0 := s.residentParts()
		wait := func() {}
		if profDir != "" {
			wait = s.profile(filepath.Join(profDir, fileName(label+"-bigread-"+what)+".cpu.pprof"), o.profileFor)
		}
		start := time.Now()
		got, err := read()
		took := time.Since(start)
		wait()
		peak, _ := s.memory()
		if err == nil && got != n {
			err = fmt.Errorf("read %d objects, want %d", got, n)
		}
		if err != nil {
			return 0, fmt.Errorf("%s: %w", what, err)
		}
		anon, file := s.residentParts()
		fmt.Printf("%-12s %s of %d objects took %v; peak resident memory +%.0f MiB over %.0f MiB (anonymous %.0f MiB -> %.0f MiB, file %.0f MiB -> %.0f MiB)\n", label, what, n, took.Round(time.Millisecond), float64(peak-base)/(1<<20), float64(base)/(1<<20),
			float64(anon0)/(1<<20), float64(anon)/(1<<20), float64(file0)/(1<<20), float64(file)/(1<<20))
		return peak - base, nil
	}
	end := "objects0"
	stream, err := measure("RangeStream", func() (int, error) {
		st, err := rangestream.Open(ctx, cl.ActiveConnection(), &pb.RangeRequest{Key: []byte("objects/"), RangeEnd: []byte(end)})
		if err != nil {
			return 0, err
		}
		got := 0
		for {
			c, err := st.Recv()
			if errors.Is(err, io.EOF) {
				return got, nil
			}
			if err != nil {
				return got, err
			}
			got += len(c.Kvs)
		}
	})
	streamed := err == nil
	if status.Code(err) == codes.Unimplemented {
		// 3.6 and before: no RangeStream, so no figure; the other reads still run.
		fmt.Printf("%-12s has no RangeStream (3.7's): %v\n", label, err)
		err = nil
	}
	if err != nil {
		return smp, err
	}
	var listTook time.Duration
	paged, err := measure(fmt.Sprintf("paginated Range (pages of %d)", bigReadPage), func() (int, error) {
		start := time.Now()
		defer func() { listTook = time.Since(start) }()
		got, key, rev := 0, "objects/", int64(0)
		for {
			opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(bigReadPage)}
			if rev != 0 {
				opts = append(opts, clientv3.WithRev(rev))
			}
			r, err := cl.Get(ctx, key, opts...)
			if err != nil {
				return got, err
			}
			rev = r.Header.Revision
			got += len(r.Kvs)
			if !r.More || len(r.Kvs) == 0 {
				return got, nil
			}
			key = string(r.Kvs[len(r.Kvs)-1].Key) + "\x00"
		}
	})
	if err != nil {
		return smp, err
	}
	unary, err := measure("unary Range of everything", func() (int, error) {
		r, err := cl.Get(ctx, "objects/", clientv3.WithRange(end))
		if err != nil {
			return 0, err
		}
		return len(r.Kvs), nil
	})
	if err != nil {
		return smp, err
	}
	if streamed {
		smp.values[figStreamPeak] = float64(stream)
	}
	smp.values[figPagedPeak] = float64(paged)
	smp.values[figUnaryPeak] = float64(unary)
	smp.values[figPagedListDur] = float64(listTook)
	return smp, nil
}
