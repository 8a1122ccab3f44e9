package commands

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/logutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"

	"etcdx/etcdctl/cli"
	"etcdx/etcdctl/printer"
)

func hexID(arg, what string) (uint64, error) {
	id, err := strconv.ParseUint(arg, 16, 64)
	if err != nil {
		return 0, cli.BadArgs("bad %s arg (%v), expecting ID in Hex", what, err)
	}
	return id, nil
}

func memberCommand(g *global) *cli.Command {
	var peerURLs string
	consistency := "l" // 3.5 has no --consistency: its list is linearizable
	var learner bool
	return &cli.Command{Name: "member", Args: "<subcommand>", Short: "Membership related commands", Subs: []*cli.Command{
		{Name: "add", Args: "<memberName> [options]", Short: "Adds a member into the cluster",
			Flags: func(fs *pflag.FlagSet) {
				fs.StringVar(&peerURLs, "peer-urls", "", "comma separated peer URLs for the new member.")
				fs.BoolVar(&learner, "learner", false, "indicates if the new member is raft learner")
			},
			Run: run(g, func(e *env) error {
				if len(e.Args) < 1 {
					return cli.BadArgs("member name not provided")
				}
				if len(e.Args) > 1 {
					ev := "too many arguments"
					for _, s := range e.Args {
						if strings.HasPrefix(strings.ToLower(s), "http") {
							ev += fmt.Sprintf(`, did you mean --peer-urls=%s`, s)
						}
					}
					return cli.BadArgs("%s", ev)
				}
				if peerURLs == "" {
					return cli.BadArgs("member peer urls not provided")
				}
				urls := strings.Split(peerURLs, ",")
				resp, err := call(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.MemberAddResponse, error) {
					if learner {
						return c.MemberAddAsLearner(ctx, urls)
					}
					return c.MemberAdd(ctx, urls)
				})
				if err != nil {
					return err
				}
				if err := e.out.Print(printer.MemberChange{Verb: "added", ID: resp.Member.ID, Learner: resp.Member.IsLearner,
					Header: resp.Header, Resp: (*pb.MemberAddResponse)(resp)}); err != nil {
					return err
				}
				if e.out.Format == "simple" {
					name := e.Args[0]
					var conf []string
					for _, m := range resp.Members {
						n := m.Name
						if m.ID == resp.Member.ID {
							n = name
						}
						for _, u := range m.PeerURLs {
							conf = append(conf, n+"="+u)
						}
					}
					e.out.Printf("\nETCD_NAME=%q\nETCD_INITIAL_CLUSTER=%q\nETCD_INITIAL_ADVERTISE_PEER_URLS=%q\nETCD_INITIAL_CLUSTER_STATE=\"existing\"\n",
						name, strings.Join(conf, ","), peerURLs)
				}
				return nil
			})},
		{Name: "remove", Args: "<memberID>", Short: "Removes a member from the cluster",
			Run: memberByID(g, "removed from", func(ctx context.Context, c *clientv3.Client, id uint64) (*pb.ResponseHeader, memberResp, error) {
				r, err := c.MemberRemove(ctx, id)
				if err != nil {
					return nil, nil, err
				}
				return r.Header, (*pb.MemberRemoveResponse)(r), nil
			})},
		{Name: "update", Args: "<memberID> [options]", Short: "Updates a member in the cluster",
			Flags: func(fs *pflag.FlagSet) {
				fs.StringVar(&peerURLs, "peer-urls", "", "comma separated peer URLs for the updated member.")
			},
			Run: memberByID(g, "updated in", func(ctx context.Context, c *clientv3.Client, id uint64) (*pb.ResponseHeader, memberResp, error) {
				if peerURLs == "" {
					return nil, nil, cli.BadArgs("member peer urls not provided")
				}
				r, err := c.MemberUpdate(ctx, id, strings.Split(peerURLs, ","))
				if err != nil {
					return nil, nil, err
				}
				return r.Header, (*pb.MemberUpdateResponse)(r), nil
			})},
		{Name: "list", Short: "Lists all members in the cluster", Long: memberListHelp,
			Flags: func(fs *pflag.FlagSet) {
				if g.atLeast("3.6") {
					fs.StringVar(&consistency, "consistency", "l", "Linearizable(l) or Serializable(s)")
				}
			},
			Run: run(g, func(e *env) error {
				var opts []clientv3.OpOption
				switch consistency {
				case "s":
					opts = append(opts, clientv3.WithSerializable())
				case "l":
				default:
					return &cli.Error{Code: cli.ExitBadFeature, Err: fmt.Errorf("unknown consistency flag %q", consistency)}
				}
				resp, err := call(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.MemberListResponse, error) {
					return c.MemberList(ctx, opts...)
				})
				if err != nil {
					return err
				}
				return e.out.Print(printer.MemberList{R: (*pb.MemberListResponse)(resp)})
			})},
		{Name: "promote", Args: "<memberID>", Short: "Promotes a non-voting member in the cluster",
			Long: "Promotes a non-voting learner member to a voting one in the cluster.\n",
			Run: memberByID(g, "promoted in", func(ctx context.Context, c *clientv3.Client, id uint64) (*pb.ResponseHeader, memberResp, error) {
				r, err := c.MemberPromote(ctx, id)
				if err != nil {
					return nil, nil, err
				}
				return r.Header, (*pb.MemberPromoteResponse)(r), nil
			})},
	}}
}

// memberResp is a member change answer as the json and protobuf formats print it.
type memberResp = interface{ Marshal() ([]byte, error) }

// memberByID runs a member change that takes one hex member ID argument.
func memberByID(g *global, verb string, f func(ctx context.Context, c *clientv3.Client, id uint64) (*pb.ResponseHeader, memberResp, error)) func(*cli.Ctx) error {
	return run(g, func(e *env) error {
		if len(e.Args) != 1 {
			return cli.BadArgs("member ID is not provided")
		}
		id, err := hexID(e.Args[0], "member ID")
		if err != nil {
			return err
		}
		c, err := e.cl()
		if err != nil {
			return err
		}
		ctx, cancel := e.ctx()
		defer cancel()
		hdr, resp, err := f(ctx, c, id)
		if err != nil {
			return err
		}
		return e.out.Print(printer.MemberChange{Verb: verb, ID: id, Header: hdr, Resp: resp})
	})
}

// targets are the endpoints a per-endpoint command visits: --endpoints, or with --cluster every
// member's client URLs.
func (e *env) targets(cluster bool) ([]string, error) {
	if !cluster {
		return e.g.endpoints, nil
	}
	resp, err := call(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.MemberListResponse, error) {
		return c.MemberList(ctx)
	})
	if err != nil {
		return nil, fmt.Errorf("failed to fetch endpoints from etcd cluster member list: %w", err)
	}
	var eps []string
	for _, m := range resp.Members {
		eps = append(eps, m.ClientURLs...)
	}
	return eps, nil
}

// eachEndpoint calls f with a client for each endpoint in turn.
func (e *env) eachEndpoint(eps []string, f func(ep string, c *clientv3.Client)) error {
	for _, ep := range eps {
		c, err := e.newClient([]string{ep})
		if err != nil {
			return err
		}
		f(ep, c)
		c.Close()
	}
	return nil
}

func endpointCommand(g *global) *cli.Command {
	hashkvDefault := "latest revision"
	if !g.atLeast("3.6") {
		hashkvDefault = "all revisions" // 3.5's words for the same default
	}
	var cluster bool
	var rev int64
	return &cli.Command{Name: "endpoint", Args: "<subcommand>", Short: "Endpoint related commands", PersistentFlags: func(fs *pflag.FlagSet) {
		fs.BoolVar(&cluster, "cluster", false, "use all endpoints from the cluster member list")
	}, Subs: []*cli.Command{
		{Name: "health", Short: "Checks the healthiness of endpoints specified in `--endpoints` flag",
			Run: run(g, func(e *env) error {
				eps, err := e.targets(cluster)
				if err != nil {
					return err
				}
				hs := make(printer.Health, len(eps))
				done := make(chan struct{}, len(eps))
				for i, ep := range eps {
					go func() {
						defer func() { done <- struct{}{} }()
						hs[i] = e.health(ep)
					}()
				}
				for range eps {
					<-done
				}
				if err := e.out.Print(hs); err != nil {
					return err
				}
				for _, h := range hs {
					if h.Error != "" {
						return errors.New("unhealthy cluster")
					}
				}
				return nil
			})},
		{Name: "status", Short: "Prints out the status of endpoints specified in `--endpoints` flag", Long: endpointStatusHelp,
			Run: run(g, func(e *env) error {
				eps, err := e.targets(cluster)
				if err != nil {
					return err
				}
				var st printer.Status
				var failed error
				if err := e.eachEndpoint(eps, func(ep string, c *clientv3.Client) {
					ctx, cancel := e.ctx()
					defer cancel()
					resp, err := c.Status(ctx, ep)
					if err != nil {
						failed = err
						fmt.Fprintf(e.Stderr, "Failed to get the status of endpoint %s (%v)\n", ep, err)
						return
					}
					st = append(st, printer.EndpointStatus{Ep: ep, Resp: (*pb.StatusResponse)(resp)})
				}); err != nil {
					return err
				}
				if err := e.out.Print(st); err != nil {
					return err
				}
				if failed != nil {
					return &cli.Error{Code: cli.ExitError, Err: failed}
				}
				return nil
			})},
		{Name: "hashkv", Short: "Prints the KV history hash for each endpoint in --endpoints",
			Flags: func(fs *pflag.FlagSet) {
				fs.Int64Var(&rev, "rev", 0, "maximum revision to hash (default: "+hashkvDefault+")")
			},
			Run: run(g, func(e *env) error {
				eps, err := e.targets(cluster)
				if err != nil {
					return err
				}
				var hs printer.HashKV
				var failed error
				if err := e.eachEndpoint(eps, func(ep string, c *clientv3.Client) {
					ctx, cancel := e.ctx()
					defer cancel()
					resp, err := c.HashKV(ctx, ep, rev)
					if err != nil {
						failed = err
						fmt.Fprintf(e.Stderr, "Failed to get the hash of endpoint %s (%v)\n", ep, err)
						return
					}
					hs = append(hs, printer.EndpointHashKV{Ep: ep, Resp: (*pb.HashKVResponse)(resp)})
				}); err != nil {
					return err
				}
				if err := e.out.Print(hs); err != nil {
					return err
				}
				return failed
			})},
	}}
}

// health is upstream's check: a linearizable read commits through consensus, then no alarms.
func (e *env) health(ep string) printer.EndpointHealth {
	h := printer.EndpointHealth{Ep: ep}
	c, err := e.newClient([]string{ep})
	if err != nil {
		h.Error = err.Error()
		return h
	}
	defer c.Close()
	start := time.Now()
	ctx, cancel := e.ctx()
	defer cancel()
	_, err = c.Get(ctx, "health")
	h.Took = time.Since(start).String()
	if err != nil && !errors.Is(err, rpctypes.ErrPermissionDenied) {
		h.Error = err.Error()
		return h
	}
	resp, err := c.AlarmList(ctx)
	switch {
	case err != nil:
		h.Error = "Unable to fetch the alarm list"
	case len(resp.Alarms) > 0:
		h.Error = "Active Alarm(s): "
		for _, a := range resp.Alarms {
			switch a.Alarm {
			case pb.AlarmType_NOSPACE:
				h.Error += "NOSPACE "
			case pb.AlarmType_CORRUPT:
				h.Error += "CORRUPT "
			default:
				h.Error += "UNKNOWN "
			}
		}
	default:
		h.Health = true
	}
	return h
}

func leaseCommand(g *global) *cli.Command {
	var keys, once bool
	leaseArg := func(e *env, what string) (clientv3.LeaseID, error) {
		if len(e.Args) != 1 {
			return 0, cli.BadArgs("%s", what)
		}
		id, err := strconv.ParseInt(e.Args[0], 16, 64)
		if err != nil {
			return 0, cli.BadArgs("bad lease ID arg (%v), expecting ID in Hex", err)
		}
		return clientv3.LeaseID(id), nil
	}
	return &cli.Command{Name: "lease", Args: "<subcommand>", Short: "Lease related commands", Subs: []*cli.Command{
		{Name: "grant", Args: "<ttl>", Short: "Creates leases",
			Run: run(g, func(e *env) error {
				if len(e.Args) != 1 {
					return cli.BadArgs("lease grant command needs TTL argument")
				}
				ttl, err := strconv.ParseInt(e.Args[0], 10, 64)
				if err != nil {
					return cli.BadArgs("bad TTL (%v)", err)
				}
				resp, err := call(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.LeaseGrantResponse, error) {
					return c.Grant(ctx, ttl)
				})
				if err != nil {
					return fmt.Errorf("failed to grant lease (%w)", err)
				}
				return e.out.Print(printer.Grant{R: resp})
			})},
		{Name: "revoke", Args: "<leaseID>", Short: "Revokes leases",
			Run: run(g, func(e *env) error {
				id, err := leaseArg(e, "lease revoke command needs 1 argument")
				if err != nil {
					return err
				}
				resp, err := call(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.LeaseRevokeResponse, error) {
					return c.Revoke(ctx, id)
				})
				if err != nil {
					return fmt.Errorf("failed to revoke lease (%w)", err)
				}
				return e.out.Print(printer.Revoke{ID: int64(id), R: (*pb.LeaseRevokeResponse)(resp)})
			})},
		{Name: "timetolive", Args: "<leaseID> [options]", Short: "Get lease information",
			Flags: func(fs *pflag.FlagSet) { fs.BoolVar(&keys, "keys", false, "Get keys attached to this lease") },
			Run: run(g, func(e *env) error {
				id, err := leaseArg(e, "lease timetolive command needs lease ID as argument")
				if err != nil {
					return err
				}
				var opts []clientv3.LeaseOption
				if keys {
					opts = append(opts, clientv3.WithAttachedKeys())
				}
				resp, err := call(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.LeaseTimeToLiveResponse, error) {
					return c.TimeToLive(ctx, id, opts...)
				})
				if err != nil {
					return err
				}
				return e.out.Print(printer.TimeToLive{R: resp, Keys: keys})
			})},
		{Name: "list", Short: "List all active leases",
			Run: run(g, func(e *env) error {
				resp, err := call(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.LeaseLeasesResponse, error) {
					return c.Leases(ctx)
				})
				if err != nil {
					return fmt.Errorf("failed to list leases (%w)", err)
				}
				return e.out.Print(printer.Leases{R: resp})
			})},
		{Name: "keep-alive", Args: "[options] <leaseID>", Short: "Keeps leases alive (renew)",
			Flags: func(fs *pflag.FlagSet) {
				fs.BoolVar(&once, "once", false, "Resets the keep-alive time to its original value and cobrautl.Exits immediately")
			},
			Run: run(g, func(e *env) error {
				id, err := leaseArg(e, "lease keep-alive command needs lease ID as argument")
				if err != nil {
					return err
				}
				c, err := e.cl()
				if err != nil {
					return err
				}
				if once {
					resp, err := c.KeepAliveOnce(context.Background(), id)
					if err != nil {
						return &cli.Error{Code: cli.ExitBadConnection, Err: err}
					}
					return e.out.Print(printer.KeepAlive{R: resp})
				}
				ch, err := c.KeepAlive(context.Background(), id)
				if err != nil {
					return &cli.Error{Code: cli.ExitBadConnection, Err: err}
				}
				for resp := range ch {
					if err := e.out.Print(printer.KeepAlive{R: resp}); err != nil {
						return err
					}
				}
				if e.out.Format == "simple" {
					e.out.Printf("lease %016x expired or revoked.\n", id)
				}
				return nil
			})},
	}}
}

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

func downgradeCommand(g *global) *cli.Command {
	withTarget := func(action string, a clientv3.DowngradeAction) func(*cli.Ctx) error {
		return run(g, func(e *env) error {
			if len(e.Args) < 1 {
				return cli.BadArgs("TARGET_VERSION not provided")
			}
			if len(e.Args) > 1 {
				return cli.BadArgs("too many arguments")
			}
			if e.Args[0] == "" {
				return cli.BadArgs("target version not provided")
			}
			resp, err := call(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.DowngradeResponse, error) {
				return c.Downgrade(ctx, a, e.Args[0])
			})
			if err != nil {
				return err
			}
			return e.out.Print(printer.Downgrade{Action: action, R: (*pb.DowngradeResponse)(resp)})
		})
	}
	return &cli.Command{Name: "downgrade", Args: "<TARGET_VERSION>", Short: "Downgrade related commands", Since: "3.6", Subs: []*cli.Command{
		{Name: "validate", Args: "<TARGET_VERSION>", Short: "Validate downgrade capability before starting downgrade", Run: withTarget("validate", clientv3.DowngradeValidate)},
		{Name: "enable", Args: "<TARGET_VERSION>", Short: "Start a downgrade action to cluster", Run: withTarget("enable", clientv3.DowngradeEnable)},
		{Name: "cancel", Short: "Cancel the ongoing downgrade action to cluster", Run: run(g, func(e *env) error {
			resp, err := call(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.DowngradeResponse, error) {
				return c.Downgrade(ctx, clientv3.DowngradeCancel, "")
			})
			if err != nil {
				return err
			}
			return e.out.Print(printer.Downgrade{Action: "cancel", R: (*pb.DowngradeResponse)(resp)})
		})},
	}}
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

// The long help and examples of upstream's commands, shown by --help.
const (
	endpointStatusHelp = `When --write-out is set to simple, this command prints out comma-separated status lists for each endpoint.
The items in the lists are endpoint, ID, version, db size, is leader, is learner, raft term, raft index, raft applied index, errors.
`
	memberListHelp = `When --write-out is set to simple, this command prints out comma-separated member lists for each endpoint.
The items in the lists are ID, Status, Name, Peer Addrs, Client Addrs, Is Learner.
`
	snapshotExample = `  # Save snapshot to a given file
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
)
