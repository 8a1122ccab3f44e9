package commands

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/client/pkg/v3/logutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"

	"etcdx/etcdctl/cli"
	"etcdx/etcdctl/printer"
)

func alarmCommand(g *global) *cli.Command {
	alarm := func(name string, f func(ctx context.Context, c *clientv3.Client) (*clientv3.AlarmResponse, error)) func(*cli.Ctx) error {
		return run(g, func(e *env) error {
			if len(e.Args) != 0 {
				return cli.BadArgs("alarm %s command accepts no arguments", name)
			}
			resp, err := call(e, f)
			if err != nil {
				return err
			}
			return e.out.Print(printer.Alarms{R: (*pb.AlarmResponse)(resp)})
		})
	}
	return &cli.Command{Name: "alarm", Args: "<subcommand>", Short: "Alarm related commands", Subs: []*cli.Command{
		{Name: "disarm", Short: "Disarms all alarms", Run: alarm("disarm", func(ctx context.Context, c *clientv3.Client) (*clientv3.AlarmResponse, error) {
			return c.AlarmDisarm(ctx, &clientv3.AlarmMember{})
		})},
		{Name: "list", Short: "Lists all alarms", Run: alarm("list", func(ctx context.Context, c *clientv3.Client) (*clientv3.AlarmResponse, error) {
			return c.AlarmList(ctx)
		})},
	}}
}

func defragCommand(g *global) *cli.Command {
	var cluster bool
	var dataDir string
	return &cli.Command{Name: "defrag", Short: "Defragments the storage of the etcd members with given endpoints",
		Flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&cluster, "cluster", false, "use all endpoints from the cluster member list")
			if !g.atLeast(offlineUntil) {
				fs.StringVar(&dataDir, "data-dir", "", "Optional. If present, defragments a data directory not in use by etcd.")
			}
		},
		Run: run(g, func(e *env) error {
			if dataDir != "" {
				return defragDataDir(e.Ctx, dataDir)
			}
			eps, err := e.targets(cluster)
			if err != nil {
				return err
			}
			failures := 0
			if err := e.eachEndpoint(eps, func(ep string, c *clientv3.Client) {
				if !e.defragOne(c, ep) {
					failures++
				}
			}); err != nil {
				return err
			}
			if failures > 0 {
				return fmt.Errorf("%d of %d members failed to defragment", failures, len(eps))
			}
			return nil
		}),
	}
}

// defragOne defragments the member at ep and reports how it went, as upstream words it.
func (e *env) defragOne(c *clientv3.Client, ep string) bool {
	ctx, cancel := e.ctx()
	defer cancel()
	start := time.Now()
	_, err := c.Defragment(ctx, ep)
	d := time.Since(start)
	timed := e.g.atLeast("3.6") // 3.5 does not say how long it took
	switch {
	case err != nil && timed:
		fmt.Fprintf(e.Stderr, "Failed to defragment etcd member[%s]. took %s. (%v)\n", ep, d, err)
	case err != nil:
		fmt.Fprintf(e.Stderr, "Failed to defragment etcd member[%s] (%v)\n", ep, err)
	case timed:
		fmt.Fprintf(e.Stdout, "Finished defragmenting etcd member[%s]. took %s\n", ep, d)
	default:
		fmt.Fprintf(e.Stdout, "Finished defragmenting etcd member[%s]\n", ep)
	}
	return err == nil
}

func moveLeaderCommand(g *global) *cli.Command {
	return &cli.Command{Name: "move-leader", Args: "<transferee-member-id>", Short: "Transfers leadership to another etcd cluster member.",
		Run: run(g, func(e *env) error {
			if len(e.Args) != 1 {
				return cli.BadArgs("move-leader command needs 1 argument")
			}
			target, err := strconv.ParseUint(e.Args[0], 16, 64)
			if err != nil {
				return cli.BadArgs("%v", err)
			}
			var leaderEp string
			var leaderID uint64
			for _, ep := range e.g.endpoints {
				c, err := e.newClient([]string{ep})
				if err != nil {
					return err
				}
				ctx, cancel := e.ctx()
				st, err := c.Status(ctx, ep)
				cancel()
				c.Close()
				if err != nil {
					return err
				}
				if st.Header.MemberId == st.Leader {
					leaderEp, leaderID = ep, st.Leader
					break
				}
			}
			if leaderEp == "" {
				return cli.BadArgs("no leader endpoint given at %v", e.g.endpoints)
			}
			c, err := e.newClient([]string{leaderEp})
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, cancel := e.ctx()
			defer cancel()
			if _, err := c.MoveLeader(ctx, target); err != nil {
				return err
			}
			return e.out.Print(printer.MoveLeader{From: leaderID, To: target})
		}),
	}
}

func snapshotCommand(g *global) *cli.Command {
	example := snapshotExample
	if !g.atLeast("3.7") {
		example = strings.Replace(example, "with certain user", "wih certain user", 1) // as the earlier lines print it
	}
	return &cli.Command{Name: "snapshot", Args: "<subcommand>", Short: "Manages etcd node snapshots", Example: example, Subs: []*cli.Command{
		{Name: "save", Args: "<filename>", Short: "Stores an etcd node backend snapshot to a given file", Example: example,
			Run: run(g, func(e *env) error {
				if len(e.Args) != 1 {
					return cli.BadArgs("snapshot save expects one argument%s", sinceLevel(g, "3.6", " <filename>"))
				}
				if len(e.g.endpoints) != 1 {
					return cli.BadArgs("snapshot must be requested to one selected node, not multiple %v", e.g.endpoints)
				}
				s, err := e.spec(e.g.endpoints)
				if err != nil {
					return err
				}
				cfg, err := clientv3.NewClientConfig(s, zap.NewNop())
				if err != nil {
					return err
				}
				// Without an explicit --command-timeout a large snapshot is not cut short.
				ctx, cancel := context.WithCancel(context.Background())
				if e.Flags.Changed("command-timeout") {
					ctx, cancel = e.ctx()
				}
				defer cancel()
				// The library's own log of the download, on standard error, as upstream's.
				lg, err := logutil.CreateDefaultZapLogger(zap.InfoLevel)
				if err != nil {
					return err
				}
				ver, err := snapshot.SaveWithVersion(ctx, lg, *cfg, e.Args[0])
				if err != nil {
					return &cli.Error{Code: cli.ExitInterrupted, Err: err}
				}
				fmt.Fprintf(e.Stdout, "Snapshot saved at %s\n", e.Args[0])
				if ver != "" && g.atLeast("3.6") { // 3.5 does not say
					fmt.Fprintf(e.Stdout, "Server version %s\n", ver)
				}
				return nil
			})},
		snapshotRestore35(), snapshotStatus35(g),
	}}
}

// snapshotExample is upstream's example of snapshot and snapshot save.
const snapshotExample = `  # Save snapshot to a given file
  etcdctl snapshot save /backup/etcd-snapshot.db
  
  # Get snapshot from given address and save it to file
  etcdctl snapshot save --endpoints=127.0.0.1:3000 /backup/etcd-snapshot.db
  
  # Get snapshot from given address with certificates
  etcdctl --endpoints=https://127.0.0.1:2379 --cacert=/etc/etcd/ca.crt --cert=/etc/etcd/etcd.crt --key=/etc/etcd/etcd.key snapshot save /backup/etcd-snapshot.db
  
  # Get snapshot with certain user and password
  etcdctl --user=root --password=password123 snapshot save /backup/etcd-snapshot.db
  
  # Get snapshot from given address with timeout
  etcdctl --endpoints=https://127.0.0.1:2379 --dial-timeout=20s snapshot save /backup/etcd-snapshot.db
  
  # Save snapshot with desirable time format
  etcdctl snapshot save /mnt/backup/etcd/backup_$(date +%Y%m%d_%H%M%S).db`
