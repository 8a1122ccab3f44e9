package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"etcdx/upgradelab/cluster"
)

// The start-up part's figures.
const (
	figStartup    = "startup"
	figStartupRSS = "startup-rss"
)

// startupData is the data dir every start-up round copies: made once per bench run.
type startupData struct {
	once    sync.Once
	root    string // holds dir; removed at the end of the run
	dir     string // the restored data dir
	peerURL string // the member's peer URL recorded in it
	err     error
}

// startupValueSize is the size of each value in the start-up data: o.startupBytes over
// o.startupKeys, rounded to what an encoded record adds.
func startupValueSize(o options) int { return max(int(o.startupBytes/int64(o.startupKeys))-64, 1) }

// prepare writes a database of o.startupKeys keys, one revision each, straight into a bbolt file
// in upstream's layout (the key bucket: 17-byte revision keys to mvccpb.KeyValue), and turns it
// into a member's data dir with `etcdutl snapshot restore` (the etcdutl beside bin).
func (d *startupData) prepare(bin string, o options) {
	d.once.Do(func() {
		d.err = func() error {
			root, err := os.MkdirTemp("", "bench-startup-")
			if err != nil {
				return err
			}
			d.root = root
			dbPath := filepath.Join(root, "snapshot.db")
			start := time.Now()
			if err := writeStartupDB(dbPath, o.startupKeys, startupValueSize(o)); err != nil {
				return fmt.Errorf("write the start-up database: %w", err)
			}
			if d.peerURL, err = cluster.FreeURL(); err != nil {
				return err
			}
			d.dir = filepath.Join(root, "data")
			etcdutl := filepath.Join(filepath.Dir(bin), "etcdutl")
			out, err := exec.Command(etcdutl, "snapshot", "restore", dbPath, "--skip-hash-check", "--data-dir", d.dir,
				"--name", "b1", "--initial-cluster", "b1="+d.peerURL, "--initial-advertise-peer-urls", d.peerURL).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%s snapshot restore: %v: %s", etcdutl, err, out)
			}
			os.Remove(dbPath)
			fmt.Printf("start-up data: %d keys of %d B written and restored with %s in %v\n", o.startupKeys, startupValueSize(o), etcdutl, time.Since(start).Round(time.Second))
			return nil
		}()
	})
}

// remove deletes the data made for the run.
func (d *startupData) remove() {
	if d.root != "" {
		os.RemoveAll(d.root)
	}
}

// writeStartupDB writes n keys "startup/%09d" at revisions 2..n+1 with values of size bytes.
func writeStartupDB(path string, n, size int) error {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{NoSync: true, NoFreelistSync: true})
	if err != nil {
		return err
	}
	defer db.Close()
	val := []byte(strings.Repeat("s", size))
	const perTx = 100000
	for first := 0; first < n; first += perTx {
		err := db.Update(func(tx *bbolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("key"))
			if err != nil {
				return err
			}
			b.FillPercent = 1 // keys come in order
			if _, err := tx.CreateBucketIfNotExists([]byte("meta")); err != nil {
				return err
			}
			for i := first; i < min(first+perTx, n); i++ {
				rev := int64(i + 2)
				kv := mvccpb.KeyValue{Key: []byte(fmt.Sprintf("startup/%09d", i)), Value: val, CreateRevision: rev, ModRevision: rev, Version: 1}
				enc, err := kv.Marshal()
				if err != nil {
					return err
				}
				rk := make([]byte, 17)
				binary.BigEndian.PutUint64(rk, uint64(rev))
				rk[8] = '_'
				if err := b.Put(rk, enc); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return db.Sync()
}

// benchStartup copies the start-up data dir (o.startupKeys keys, o.startupBytes in all) for a
// fresh member, starts it and times until it answers a serializable range of one key; then it
// reads the member's resident memory.
func benchStartup(data *startupData) func(label, bin string, o options, _ string) (sample, error) {
	return func(label, bin string, o options, _ string) (sample, error) {
		smp := newSample()
		data.prepare(bin, o)
		if data.err != nil {
			return smp, data.err
		}
		s, err := newServer(label, bin, "b1", false)
		if err != nil {
			return smp, err
		}
		defer s.stop()
		s.PeerURL = data.peerURL
		s.Extra = append(s.Extra, "--quota-backend-bytes", fmt.Sprint(4*o.startupBytes))
		if out, err := exec.Command("cp", "-a", data.dir, s.DataDir).CombinedOutput(); err != nil {
			return smp, fmt.Errorf("copy the data dir: %v: %s", err, out)
		}
		// The copy's 4 GiB of dirty pages would be written back while the member starts, a
		// cost of the bench's set-up, not of the start.
		syscall.Sync()
		start := time.Now()
		if err := s.Start(); err != nil {
			return smp, err
		}
		cl, err := clientv3.New(clientv3.Config{Endpoints: []string{s.ClientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return smp, err
		}
		defer cl.Close()
		key := fmt.Sprintf("startup/%09d", o.startupKeys-1)
		var took time.Duration
		for deadline := time.Now().Add(10 * time.Minute); ; {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			r, err := cl.Get(ctx, key, clientv3.WithSerializable())
			cancel()
			if err == nil && len(r.Kvs) == 1 {
				took = time.Since(start)
				break
			}
			if time.Now().After(deadline) || !s.Running() {
				return smp, fmt.Errorf("the member did not serve %s within 10 minutes of its start (log in %s): %v", key, s.dir, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		peak, now := s.memory()
		smp.values[figStartup] = float64(took)
		smp.values[figStartupRSS] = float64(peak)
		fmt.Printf("%-12s started on %d keys (%.1f GiB) and served in %v; resident memory %.0f MiB (peak %.0f MiB)\n",
			label, o.startupKeys, float64(o.startupBytes)/(1<<30), took.Round(time.Millisecond), float64(now)/(1<<20), float64(peak)/(1<<20))
		return smp, nil
	}
}
