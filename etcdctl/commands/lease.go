package commands

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/pflag"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/etcdctl/cli"
	"etcdx/etcdctl/printer"
)

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
