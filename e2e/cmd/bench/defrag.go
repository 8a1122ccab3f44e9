package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The defrag part's figures.
const (
	figDefragStall   = "defrag-stall"
	figDefragTook    = "defrag-took"
	figDefragAfter   = "defrag-size-after"
	figDefragFailed  = "defrag-failed"
	figOfflineDefrag = "offline-defrag-took"
)

// defragValueSize is the size of the values that fill the defragmented database: kube objects
// of a few kilobytes, and a fill of gigabytes in minutes.
const defragValueSize = 16 << 10

// benchDefrag fills a fresh member's database to o.defragBytes, deletes every other key and
// compacts, so about half of the file is free pages, then defragments it online under a steady
// load of 8 clients putting and getting. Its figures: the longest put that overlapped the
// defrag (upstream holds every write for the whole copy), the defrag's time, the file's size
// after it and the requests that failed. HashKV at the revision before the defrag must be the
// same after it. Then it frees a quarter more, stops the member and times the offline
// `etcdutl defrag` of the same implementation (the etcdutl beside its etcd).
func benchDefrag(label, bin string, o options, _ string) (sample, error) {
	smp := newSample()
	// At info level the member logs its defrag (ours: the phases and how long writes were held).
	s, err := startServerWith(label, bin, false, nil, "--quota-backend-bytes", fmt.Sprint(4*o.defragBytes), "--log-level", "info")
	if err != nil {
		return smp, err
	}
	defer s.stop()
	eps := []string{s.ClientURL}
	cs, closeAll, err := newClients(eps, 3)
	if err != nil {
		return smp, err
	}
	defer closeAll()
	ctx := context.Background()
	val := strings.Repeat("d", defragValueSize)
	keys := int(o.defragBytes / defragValueSize)
	if err := loadIn(eps, "fill/%09d", keys, val, 50); err != nil {
		return smp, err
	}
	// deleteEvery deletes fill keys i with i%step == first, then compacts everything away.
	deleteEvery := func(step, first int) (int64, error) {
		_, err := run(eps, 8, 16, (keys+step*100-1)/(step*100), 30*time.Minute, func(ctx context.Context, c *clientv3.Client, b int) error {
			var ops []clientv3.Op
			for i := b*step*100 + first; i < (b+1)*step*100 && i < keys; i += step {
				ops = append(ops, clientv3.OpDelete(fmt.Sprintf("fill/%09d", i)))
			}
			_, err := c.Txn(ctx).Then(ops...).Commit()
			return err
		})
		if err != nil {
			return 0, err
		}
		r, err := cs[0].Get(ctx, "fill/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return 0, err
		}
		if _, err := cs[0].Compact(ctx, r.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
			return 0, fmt.Errorf("compact: %w", err)
		}
		return r.Header.Revision, nil
	}
	rev, err := deleteEvery(2, 0)
	if err != nil {
		return smp, err
	}
	st, err := cs[0].Status(ctx, s.ClientURL)
	if err != nil {
		return smp, err
	}
	hash0, err := cs[0].HashKV(ctx, s.ClientURL, rev)
	if err != nil {
		return smp, err
	}

	var (
		stop              = make(chan struct{})
		failed            int
		lastErr           error
		puts              [][2]time.Time
		defragFrom, until time.Time
	)
	small := strings.Repeat("p", 256)
	wait := steady(8, 30*time.Second, stop, func(ctx context.Context, w, i int) error {
		c := cs[w%2]
		if i%2 == 0 {
			_, err := c.Put(ctx, fmt.Sprintf("during/%d/%d", w, i), small)
			return err
		}
		_, err := c.Get(ctx, fmt.Sprintf("fill/%09d", 2*((w*7919+i)%(keys/2))+1))
		return err
	}, func(start, end time.Time, err error) {
		if err != nil {
			failed++
			lastErr = err
			return
		}
		puts = append(puts, [2]time.Time{start, end}) // gets too: a stall holds both
	})
	time.Sleep(time.Second)
	slow0 := s.slowDisk()
	defragFrom = time.Now()
	dctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	_, derr := cs[2].Defragment(dctx, s.ClientURL)
	cancel()
	until = time.Now()
	slow := s.slowDisk()
	time.Sleep(time.Second)
	close(stop)
	wait()
	if derr != nil {
		return smp, fmt.Errorf("defragment: %w", derr)
	}
	var (
		stall     time.Duration
		stallFrom time.Time
	)
	for _, p := range puts {
		if p[1].After(defragFrom) && p[0].Before(until) && p[1].Sub(p[0]) > stall {
			stall, stallFrom = p[1].Sub(p[0]), p[0]
		}
	}
	after, err := cs[0].Status(ctx, s.ClientURL)
	if err != nil {
		return smp, err
	}
	hash1, err := cs[0].HashKV(ctx, s.ClientURL, rev)
	if err != nil {
		return smp, err
	}
	took := until.Sub(defragFrom)
	smp.values[figDefragStall] = float64(stall)
	smp.values[figDefragTook] = float64(took)
	smp.values[figDefragAfter] = float64(after.DbSize)
	smp.values[figDefragFailed] = float64(failed)
	fmt.Printf("%-12s defrag of %.0f MiB (%.0f MiB in use) under load took %v -> %.0f MiB; longest request overlapping it %v; %d requests failed\n",
		label, float64(st.DbSize)/(1<<20), float64(st.DbSizeInUse)/(1<<20), took.Round(time.Millisecond), float64(after.DbSize)/(1<<20), stall.Round(time.Millisecond), failed)
	// Where in the defrag the longest request fell, and what the member says it held writes for
	// (ours logs it), to tell the defrag's own hold from a stall around it.
	fmt.Printf("%-12s the longest request started %v after the defrag did (%v before its end)%s\n", label,
		stallFrom.Sub(defragFrom).Round(time.Millisecond), until.Sub(stallFrom).Round(time.Millisecond), defragLogged(s.LogPath))
	// Disk waits behind the copy's writes show as slow WAL fsyncs and backend commits.
	for i, h := range slowDiskHistograms {
		fmt.Printf("%-12s during it: %.0f of %.0f %s over 128ms\n", label, slow[i].over-slow0[i].over, slow[i].all-slow0[i].all, h)
	}
	if failed > 0 {
		// A figure, not the end of the bench: upstream's clients time out behind a long defrag.
		fmt.Printf("%-12s %d requests failed during the defrag, e.g. %v\n", label, failed, lastErr)
	}
	if hash0.Hash != hash1.Hash {
		return smp, fmt.Errorf("hashkv at revision %d changed across the defrag: %d -> %d", rev, hash0.Hash, hash1.Hash)
	}

	// Offline: a quarter more freed, the member stopped, its etcdutl's defrag timed.
	if _, err := deleteEvery(4, 1); err != nil {
		return smp, err
	}
	closeAll()
	s.terminate()
	etcdutl := filepath.Join(filepath.Dir(bin), "etcdutl")
	if _, err := os.Stat(etcdutl); err != nil {
		return smp, fmt.Errorf("no etcdutl beside %s: %w", bin, err)
	}
	start := time.Now()
	out, err := exec.Command(etcdutl, "defrag", "--data-dir", s.DataDir).CombinedOutput()
	offline := time.Since(start)
	if err != nil {
		return smp, fmt.Errorf("etcdutl defrag: %v: %s", err, out)
	}
	smp.values[figOfflineDefrag] = float64(offline)
	fmt.Printf("%-12s offline etcdutl defrag took %v\n", label, offline.Round(time.Millisecond))
	return smp, nil
}

// defragLogged is what the member's log (JSON lines) says of its last defrag's phases; "" when
// it says nothing (upstream logs no such figures).
func defragLogged(logPath string) string {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return ""
	}
	var last map[string]any
	for _, line := range strings.Split(string(b), "\n") {
		var m map[string]any
		if strings.Contains(line, "finished defragmenting directory") && json.Unmarshal([]byte(line), &m) == nil {
			last = m
		}
	}
	var fields []string
	for _, f := range []string{"took", "writes-held", "catch-up-rounds", "replayed-writes"} {
		if v, ok := last[f]; ok {
			fields = append(fields, fmt.Sprintf("%s=%v", f, v))
		}
	}
	if len(fields) == 0 {
		return ""
	}
	return "; the member's log: " + strings.Join(fields, " ")
}

// slowDiskHistograms are the disk latency histograms the defrag part reads (upstream's buckets,
// ours alike, one of them at 128 ms).
var slowDiskHistograms = []string{"etcd_disk_wal_fsync_duration_seconds", "etcd_disk_backend_commit_duration_seconds"}

// slowCount is how many observations a histogram holds, and how many of them took over 128 ms.
type slowCount struct{ all, over float64 }

// slowDisk reads slowDiskHistograms' counts from the member's /metrics.
func (s *server) slowDisk() []slowCount {
	var series []string
	for _, h := range slowDiskHistograms {
		series = append(series, h+"_count", h+`_bucket{le="0.128"}`)
	}
	v := s.metrics(series...)
	out := make([]slowCount, len(slowDiskHistograms))
	for i := range out {
		out[i] = slowCount{all: v[2*i], over: v[2*i] - v[2*i+1]}
	}
	return out
}
