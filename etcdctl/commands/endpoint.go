package commands

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/etcdctl/cli"
	"etcdx/etcdctl/printer"
)

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

// endpointStatusHelp is upstream's long help of endpoint status.
const endpointStatusHelp = `When --write-out is set to simple, this command prints out comma-separated status lists for each endpoint.
The items in the lists are endpoint, ID, version, db size, is leader, is learner, raft term, raft index, raft applied index, errors.
`
