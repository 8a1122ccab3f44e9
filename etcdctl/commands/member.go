package commands

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/etcdctl/cli"
	"etcdx/etcdctl/printer"
)

// hexID reads a member or lease ID written in hex, as etcdctl prints them.
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

// memberListHelp is upstream's long help of member list.
const memberListHelp = `When --write-out is set to simple, this command prints out comma-separated member lists for each endpoint.
The items in the lists are ID, Status, Name, Peer Addrs, Client Addrs, Is Learner.
`
