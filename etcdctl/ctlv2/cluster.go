package ctlv2

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/urfave/cli"
	client "go.etcd.io/etcd/client/v2"
)

func memberCommand(e *env) cli.Command {
	withAPI := func(fn func(o opts, api client.MembersAPI) error) func(*cli.Context) error {
		return authAction(e, func(o opts, hc client.Client) error { return fn(o, client.NewMembersAPI(hc)) })
	}
	return cli.Command{Name: "member", Usage: "member add, remove and list subcommands", Subcommands: []cli.Command{
		{Name: "list", Usage: "enumerate existing cluster members", ArgsUsage: " ",
			Action: withAPI(func(o opts, api client.MembersAPI) error {
				if err := noArgs(o.c); err != nil {
					return err
				}
				ctx, cancel := o.ctx()
				defer cancel()
				ms, err := api.List(ctx)
				if err != nil {
					return plain(err)
				}
				lead, err := api.Leader(ctx)
				if err != nil {
					return fail(exitError, "Failed to get leader:  %v", err)
				}
				for _, m := range ms {
					if m.Name == "" {
						fmt.Fprintf(o.e.stdout, "%s[unstarted]: peerURLs=%s\n", m.ID, strings.Join(m.PeerURLs, ","))
						continue
					}
					fmt.Fprintf(o.e.stdout, "%s: name=%s peerURLs=%s clientURLs=%s isLeader=%v\n", m.ID, m.Name,
						strings.Join(m.PeerURLs, ","), strings.Join(m.ClientURLs, ","), m.ID == lead.ID)
				}
				return nil
			})},
		{Name: "add", Usage: "add a new member to the etcd cluster", ArgsUsage: "<name> <peerURL>",
			Action: withAPI(func(o opts, api client.MembersAPI) error {
				args := o.c.Args()
				if len(args) != 2 {
					return fail(exitError, "Provide a name and a single member peerURL")
				}
				ctx, cancel := o.ctx()
				defer cancel()
				m, err := api.Add(ctx, args[1])
				if err != nil {
					return plain(err)
				}
				name := args[0]
				fmt.Fprintf(o.e.stdout, "Added member named %s with ID %s to cluster\n", name, m.ID)
				ms, err := api.List(ctx)
				if err != nil {
					return plain(err)
				}
				var conf []string
				for _, x := range ms {
					n := x.Name
					if x.ID == m.ID {
						n = name
					}
					for _, u := range x.PeerURLs {
						conf = append(conf, fmt.Sprintf("%s=%s", n, u))
					}
				}
				fmt.Fprint(o.e.stdout, "\n")
				fmt.Fprintf(o.e.stdout, "ETCD_NAME=%q\n", name)
				fmt.Fprintf(o.e.stdout, "ETCD_INITIAL_CLUSTER=%q\n", strings.Join(conf, ","))
				fmt.Fprintf(o.e.stdout, "ETCD_INITIAL_CLUSTER_STATE=\"existing\"\n")
				return nil
			})},
		{Name: "remove", Usage: "remove an existing member from the etcd cluster", ArgsUsage: "<memberID>",
			Action: withAPI(func(o opts, api client.MembersAPI) error {
				args := o.c.Args()
				if len(args) != 1 {
					return fail(exitError, "Provide a single member ID")
				}
				id := args[0]
				ctx, cancel := o.ctx()
				defer cancel()
				ms, err := api.List(ctx)
				if err != nil {
					return fail(exitError, "Error while verifying ID against known members: %s", err)
				}
				found := false
				for _, m := range ms {
					found = found || m.ID == id
					if m.Name == id {
						fmt.Fprintf(o.e.stderr, "Found a member named %s; if this is correct, please use its ID, eg:\n\tetcdctl member remove %s\n\n", m.Name, m.ID)
					}
				}
				if !found {
					return fail(exitError, "Couldn't find a member in the cluster with an ID of %s.", id)
				}
				if err := api.Remove(ctx, id); err != nil {
					return fail(exitError, "Received an error trying to remove member %s: %s", id, err)
				}
				fmt.Fprintf(o.e.stdout, "Removed member %s from cluster\n", id)
				return nil
			})},
		{Name: "update", Usage: "update an existing member in the etcd cluster", ArgsUsage: "<memberID> <peerURLs>",
			Action: withAPI(func(o opts, api client.MembersAPI) error {
				args := o.c.Args()
				if len(args) != 2 {
					return fail(exitError, "Provide an ID and a list of comma separated peerURL (0xabcd http://example.com,http://example1.com)")
				}
				ctx, cancel := o.ctx()
				defer cancel()
				if err := api.Update(ctx, args[0], strings.Split(args[1], ",")); err != nil {
					return plain(err)
				}
				fmt.Fprintf(o.e.stdout, "Updated member with ID %s in cluster\n", args[0])
				return nil
			})},
	}}
}

// clusterHealthCommand asks every member's /health (each client URL until one answers) and
// sums up: healthy (exit 0), degraded or unavailable (exit 5), as upstream's v2 mode.
func clusterHealthCommand(e *env) cli.Command {
	return cli.Command{Name: "cluster-health", Usage: "check the health of the etcd cluster", ArgsUsage: " ",
		Flags: []cli.Flag{cli.BoolFlag{Name: "forever, f", Usage: "forever check the health every 10 second until CTRL+C"}},
		Action: func(c *cli.Context) error {
			o := opts{c: c, e: e}
			forever := c.Bool("forever")
			if forever {
				untilInterrupt()
			}
			tr, err := o.transport()
			if err != nil {
				return o.errorOut(exitServerError, err)
			}
			hc, err := o.newClient()
			if err != nil {
				return fail(exitError, "%s", err)
			}
			if c.GlobalBool("debug") {
				fmt.Fprintf(e.stderr, "Cluster-Endpoints: %s\n", strings.Join(hc.Endpoints(), ", "))
				client.EnablecURLDebug()
			}
			ms, err := client.NewMembersAPI(hc).List(context.Background())
			if err != nil {
				fmt.Fprintln(e.stdout, "cluster may be unhealthy: failed to list members")
				return o.errorOut(exitServerError, err)
			}
			web := &http.Client{Transport: tr}
			for {
				healthy := 0
				for _, m := range ms {
					if memberHealthy(e.stdout, web, m) {
						healthy++
					}
				}
				switch healthy {
				case len(ms):
					fmt.Fprintln(e.stdout, "cluster is healthy")
				case 0:
					fmt.Fprintln(e.stdout, "cluster is unavailable")
				default:
					fmt.Fprintln(e.stdout, "cluster is degraded")
				}
				if !forever {
					if healthy == len(ms) {
						return nil
					}
					return fail(exitClusterNotHealthy, "")
				}
				fmt.Fprintf(e.stdout, "\nnext check after 10 second...\n\n")
				time.Sleep(10 * time.Second)
			}
		}}
}

// memberHealthy reports one member's health through the first client URL that answers.
func memberHealthy(w io.Writer, web *http.Client, m client.Member) bool {
	if len(m.ClientURLs) == 0 {
		fmt.Fprintf(w, "member %s is unreachable: no available published client urls\n", m.ID)
		return false
	}
	for _, u := range m.ClientURLs {
		resp, err := web.Get(u + "/health")
		if err != nil {
			fmt.Fprintf(w, "failed to check the health of member %s on %s: %v\n", m.ID, u, err)
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			fmt.Fprintf(w, "failed to check the health of member %s on %s: %v\n", m.ID, u, err)
			continue
		}
		// "health" is "true" from 3.x members, a boolean from older ones.
		var asString struct{ Health string }
		var asBool struct{ Health bool }
		if err = json.Unmarshal(b, &asString); err != nil {
			err = json.Unmarshal(b, &asBool)
		}
		if err != nil {
			fmt.Fprintf(w, "failed to check the health of member %s on %s: %v\n", m.ID, u, err)
			continue
		}
		if asString.Health == "true" || asBool.Health {
			fmt.Fprintf(w, "member %s is healthy: got healthy result from %s\n", m.ID, u)
			return true
		}
		fmt.Fprintf(w, "member %s is unhealthy: got unhealthy result from %s\n", m.ID, u)
		return false
	}
	fmt.Fprintf(w, "member %s is unreachable: %v are all unreachable\n", m.ID, m.ClientURLs)
	return false
}
