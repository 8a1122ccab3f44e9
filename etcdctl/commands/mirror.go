package commands

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/mirror"

	"etcdx/etcdctl/cli"
)

// mirrorFlags are make-mirror's options: what to copy and how to reach the destination.
type mirrorFlags struct {
	prefix, destPrefix            string
	noDestPrefix                  bool
	rev                           int64
	maxTxnOps                     uint
	destCert, destKey, destCACert string
	destInsecureTransport         bool
	destUser, destPassword        string
}

func makeMirrorCommand(g *global) *cli.Command {
	f := &mirrorFlags{maxTxnOps: 128, destInsecureTransport: true}
	return &cli.Command{Name: "make-mirror", Args: "[options] <destination>", Short: "Makes a mirror at the destination etcd cluster",
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&f.prefix, "prefix", "", "Key-value prefix to mirror")
			if g.atLeast("3.6") {
				fs.Int64Var(&f.rev, "rev", 0, "Specify the kv revision to start to mirror")
				fs.UintVar(&f.maxTxnOps, "max-txn-ops", 128, "Maximum number of operations permitted in a transaction during syncing updates.")
			}
			fs.StringVar(&f.destPrefix, "dest-prefix", "", "destination prefix to mirror a prefix to a different prefix in the destination cluster")
			fs.BoolVar(&f.noDestPrefix, "no-dest-prefix", false, "mirror key-values to the root of the destination cluster")
			fs.StringVar(&f.destCert, "dest-cert", "", "Identify secure client using this TLS certificate file for the destination cluster")
			fs.StringVar(&f.destKey, "dest-key", "", "Identify secure client using this TLS key file")
			fs.StringVar(&f.destCACert, "dest-cacert", "", "Verify certificates of TLS enabled secure servers using this CA bundle")
			fs.BoolVar(&f.destInsecureTransport, "dest-insecure-transport", true, "Disable transport security for client connections")
			fs.StringVar(&f.destUser, "dest-user", "", "Destination username[:password] for authentication (prompt if password is not supplied)")
			fs.StringVar(&f.destPassword, "dest-password", "", "Destination password for authentication (if this option is used, --user option shouldn't include password)")
		},
		Run: run(g, func(e *env) error {
			if len(e.Args) != 1 {
				return cli.BadArgs("make-mirror takes one destination argument")
			}
			if f.noDestPrefix && f.destPrefix != "" {
				return cli.BadArgs("`--dest-prefix` and `--no-dest-prefix` cannot be set at the same time, choose one")
			}
			src, err := e.cl()
			if err != nil {
				return err
			}
			dst, err := e.destClient(f, e.Args[0])
			if err != nil {
				return err
			}
			defer dst.Close()
			ctx, stop := untilSignal()
			defer stop()
			err = e.mirror(ctx, src, dst, f)
			if ctx.Err() != nil {
				return nil // stopped by a signal, as one stops upstream's
			}
			return err
		}),
	}
}

// destClient connects to the destination with the --dest-* settings and the global timeouts.
func (e *env) destClient(f *mirrorFlags, endpoint string) (*clientv3.Client, error) {
	g := *e.g
	g.cert, g.key, g.cacert, g.insecureTransport = f.destCert, f.destKey, f.destCACert, f.destInsecureTransport
	g.user, g.password, g.skipVerify = f.destUser, f.destPassword, false
	de := *e
	de.g = &g
	return de.newClient([]string{endpoint})
}

// mirror copies the prefix as of --rev (or now) and then follows its changes, each source
// revision applied in transactions of at most --max-txn-ops; the running count of copied
// changes is printed every 30 seconds, as upstream does.
func (e *env) mirror(ctx context.Context, src, dst *clientv3.Client, f *mirrorFlags) error {
	var total atomic.Int64
	go func() {
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				e.out.Printf("%d\n", total.Load())
			}
		}
	}()
	destPrefix := f.destPrefix
	if !f.noDestPrefix && destPrefix == "" {
		destPrefix = f.prefix
	}
	rename := func(key []byte) string { return destPrefix + strings.TrimPrefix(string(key), f.prefix) }
	s := mirror.NewSyncer(src, f.prefix, max(f.rev-1, 0))
	if f.rev <= 1 {
		rc, errc := s.SyncBase(ctx)
		for r := range rc {
			for _, kv := range r.Kvs {
				if _, err := dst.Put(ctx, rename(kv.Key), string(kv.Value)); err != nil {
					return err
				}
				total.Add(1)
			}
		}
		if err := <-errc; err != nil {
			return err
		}
	}
	for wr := range s.SyncUpdates(ctx) {
		if wr.CompactRevision != 0 {
			return rpctypes.ErrCompacted
		}
		if err := wr.Err(); err != nil {
			return err
		}
		var ops []clientv3.Op
		var lastRev int64
		flush := func() error {
			if len(ops) == 0 {
				return nil
			}
			_, err := dst.Txn(ctx).Then(ops...).Commit()
			ops = ops[:0]
			return err
		}
		for _, ev := range wr.Events {
			if (lastRev != 0 && ev.Kv.ModRevision > lastRev) || len(ops) == int(f.maxTxnOps) {
				if err := flush(); err != nil {
					return err
				}
			}
			lastRev = ev.Kv.ModRevision
			switch ev.Type {
			case mvccpb.PUT:
				ops = append(ops, clientv3.OpPut(rename(ev.Kv.Key), string(ev.Kv.Value)))
			case mvccpb.DELETE:
				ops = append(ops, clientv3.OpDelete(rename(ev.Kv.Key)))
			default:
				return errors.New("unexpected event type")
			}
			total.Add(1)
		}
		if err := flush(); err != nil {
			return err
		}
	}
	return ctx.Err()
}
