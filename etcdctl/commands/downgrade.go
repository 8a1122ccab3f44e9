package commands

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/etcdctl/cli"
	"etcdx/etcdctl/printer"
)

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
