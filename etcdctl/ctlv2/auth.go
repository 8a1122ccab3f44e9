package ctlv2

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/urfave/cli"
	"go.etcd.io/etcd/client/pkg/v3/pathutil"
	client "go.etcd.io/etcd/client/v2"
)

// v2 auth commands print the server's refusal as it is and exit 1, as upstream's.

// authAction runs fn with a synced client.
func authAction(e *env, fn func(o opts, hc client.Client) error) func(*cli.Context) error {
	return func(c *cli.Context) error {
		o := opts{c: c, e: e}
		hc, err := o.syncedClient()
		if err != nil {
			return err
		}
		return fn(o, hc)
	}
}

// oneName is the command's single argument, or what upstream says when it is missing.
func oneName(c *cli.Context, missing string) (string, error) {
	if len(c.Args()) != 1 {
		return "", fail(exitError, "%s", missing)
	}
	return c.Args()[0], nil
}

func noArgs(c *cli.Context) error {
	if len(c.Args()) != 0 {
		return fail(exitError, "No arguments accepted")
	}
	return nil
}

func plain(err error) error { return fail(exitError, "%s", err.Error()) }

func userCommand(e *env) cli.Command {
	roles := func() []cli.Flag {
		return []cli.Flag{cli.StringSliceFlag{Name: "roles", Value: new(cli.StringSlice), Usage: "List of roles to grant or revoke"}}
	}
	withUser := func(fn func(o opts, api client.AuthUserAPI, name string) error) func(*cli.Context) error {
		return authAction(e, func(o opts, hc client.Client) error {
			name, err := oneName(o.c, "Please provide a username")
			if err != nil {
				return err
			}
			return fn(o, client.NewAuthUserAPI(hc), name)
		})
	}
	grantRevoke := func(grant bool) func(*cli.Context) error {
		return withUser(func(o opts, api client.AuthUserAPI, name string) error {
			rs := o.c.StringSlice("roles")
			if len(rs) == 0 {
				return fail(exitError, "No roles specified; please use `--roles`")
			}
			ctx, cancel := o.ctx()
			defer cancel()
			var err error
			if grant {
				_, err = api.GrantUser(ctx, name, rs)
			} else {
				_, err = api.RevokeUser(ctx, name, rs)
			}
			if err != nil {
				return plain(err)
			}
			fmt.Fprintf(o.e.stdout, "User %s updated\n", name)
			return nil
		})
	}
	return cli.Command{Name: "user", Usage: "user add, grant and revoke subcommands", Subcommands: []cli.Command{
		{Name: "add", Usage: "add a new user for the etcd cluster", ArgsUsage: "<user>",
			Action: withUser(func(o opts, api client.AuthUserAPI, arg string) error {
				name, _, _ := strings.Cut(arg, ":")
				_, pw, err := o.userPassword("New password: ", arg)
				if err != nil {
					return fail(exitError, "Error reading password: %v", err)
				}
				ctx, cancel := o.ctx()
				defer cancel()
				if err := api.AddUser(ctx, name, pw); err != nil {
					return plain(err)
				}
				fmt.Fprintf(o.e.stdout, "User %s created\n", name)
				return nil
			})},
		{Name: "get", Usage: "get details for a user", ArgsUsage: "<user>",
			Action: withUser(func(o opts, api client.AuthUserAPI, name string) error {
				ctx, cancel := o.ctx()
				defer cancel()
				u, err := api.GetUser(ctx, name)
				if err != nil {
					return plain(err)
				}
				fmt.Fprintf(o.e.stdout, "User: %s\n", u.User)
				fmt.Fprintf(o.e.stdout, "Roles: %s\n", strings.Join(u.Roles, " "))
				return nil
			})},
		{Name: "list", Usage: "list all current users", ArgsUsage: "<user>",
			Action: authAction(e, func(o opts, hc client.Client) error {
				if err := noArgs(o.c); err != nil {
					return err
				}
				ctx, cancel := o.ctx()
				defer cancel()
				users, err := client.NewAuthUserAPI(hc).ListUsers(ctx)
				if err != nil {
					return plain(err)
				}
				for _, u := range users {
					fmt.Fprintf(o.e.stdout, "%s\n", u)
				}
				return nil
			})},
		{Name: "remove", Usage: "remove a user for the etcd cluster", ArgsUsage: "<user>",
			Action: withUser(func(o opts, api client.AuthUserAPI, name string) error {
				ctx, cancel := o.ctx()
				defer cancel()
				if err := api.RemoveUser(ctx, name); err != nil {
					return plain(err)
				}
				fmt.Fprintf(o.e.stdout, "User %s removed\n", name)
				return nil
			})},
		{Name: "grant", Usage: "grant roles to an etcd user", ArgsUsage: "<user>", Flags: roles(), Action: grantRevoke(true)},
		{Name: "revoke", Usage: "revoke roles for an etcd user", ArgsUsage: "<user>", Flags: roles(), Action: grantRevoke(false)},
		{Name: "passwd", Usage: "change password for a user", ArgsUsage: "<user>",
			Action: withUser(func(o opts, api client.AuthUserAPI, name string) error {
				pw, err := o.askPassword("New password: ")
				if err != nil {
					return fail(exitError, "Error reading password: %v", err)
				}
				ctx, cancel := o.ctx()
				defer cancel()
				if _, err := api.ChangePassword(ctx, name, pw); err != nil {
					return plain(err)
				}
				fmt.Fprintf(o.e.stdout, "Password updated\n")
				return nil
			})},
	}}
}

func roleCommand(e *env) cli.Command {
	withRole := func(fn func(o opts, api client.AuthRoleAPI, name string) error) func(*cli.Context) error {
		return authAction(e, func(o opts, hc client.Client) error {
			name, err := oneName(o.c, "Please provide a role name")
			if err != nil {
				return err
			}
			return fn(o, client.NewAuthRoleAPI(hc), name)
		})
	}
	permFlags := func(verb, read, write, rw string) []cli.Flag {
		return []cli.Flag{cli.StringFlag{Name: "path", Usage: "Path " + verb + " for the role to access"},
			cli.BoolFlag{Name: "read", Usage: read}, cli.BoolFlag{Name: "write", Usage: write},
			cli.BoolFlag{Name: "readwrite, rw", Usage: rw}}
	}
	return cli.Command{Name: "role", Usage: "role add, grant and revoke subcommands", Subcommands: []cli.Command{
		{Name: "add", Usage: "add a new role for the etcd cluster", ArgsUsage: "<role> ",
			Action: withRole(func(o opts, api client.AuthRoleAPI, name string) error {
				ctx, cancel := o.ctx()
				defer cancel()
				if r, _ := api.GetRole(ctx, name); r != nil {
					return fail(exitError, "Role %s already exists", name)
				}
				if err := api.AddRole(ctx, name); err != nil {
					return plain(err)
				}
				fmt.Fprintf(o.e.stdout, "Role %s created\n", name)
				return nil
			})},
		{Name: "get", Usage: "get details for a role", ArgsUsage: "<role>",
			Action: withRole(func(o opts, api client.AuthRoleAPI, name string) error {
				ctx, cancel := o.ctx()
				defer cancel()
				r, err := api.GetRole(ctx, name)
				if err != nil {
					return plain(err)
				}
				w := o.e.stdout
				fmt.Fprintf(w, "Role: %s\n", r.Role)
				fmt.Fprintf(w, "KV Read:\n")
				for _, p := range r.Permissions.KV.Read {
					fmt.Fprintf(w, "\t%s\n", p)
				}
				fmt.Fprintf(w, "KV Write:\n")
				for _, p := range r.Permissions.KV.Write {
					fmt.Fprintf(w, "\t%s\n", p)
				}
				return nil
			})},
		{Name: "list", Usage: "list all roles", ArgsUsage: " ",
			Action: authAction(e, func(o opts, hc client.Client) error {
				if err := noArgs(o.c); err != nil {
					return err
				}
				ctx, cancel := o.ctx()
				defer cancel()
				roles, err := client.NewAuthRoleAPI(hc).ListRoles(ctx)
				if err != nil {
					return plain(err)
				}
				for _, r := range roles {
					fmt.Fprintf(o.e.stdout, "%s\n", r)
				}
				return nil
			})},
		{Name: "remove", Usage: "remove a role from the etcd cluster", ArgsUsage: "<role>",
			Action: withRole(func(o opts, api client.AuthRoleAPI, name string) error {
				ctx, cancel := o.ctx()
				defer cancel()
				if err := api.RemoveRole(ctx, name); err != nil {
					return plain(err)
				}
				fmt.Fprintf(o.e.stdout, "Role %s removed\n", name)
				return nil
			})},
		{Name: "grant", Usage: "grant path matches to an etcd role", ArgsUsage: "<role>",
			Flags:  permFlags("granted", "Grant read-only access", "Grant write-only access", "Grant read-write access"),
			Action: withRole(func(o opts, api client.AuthRoleAPI, name string) error { return o.rolePerm(api, name, true) })},
		{Name: "revoke", Usage: "revoke path matches for an etcd role", ArgsUsage: "<role>",
			Flags:  permFlags("revoked", "Revoke read access", "Revoke write access", "Revoke read-write access"),
			Action: withRole(func(o opts, api client.AuthRoleAPI, name string) error { return o.rolePerm(api, name, false) })},
	}}
}

// rolePerm grants or revokes one path for a role, with exactly one of --read, --write, --rw.
func (o opts) rolePerm(api client.AuthRoleAPI, name string, grant bool) error {
	p := o.c.String("path")
	if p == "" {
		return fail(exitError, "No path specified; please use `--path`")
	}
	if canon := pathutil.CanonicalURLPath(p); canon != p {
		return fail(exitError, "Not canonical path; please use `--path=%s`", canon)
	}
	var kind client.PermissionType
	n := 0
	for _, f := range []struct {
		name string
		t    client.PermissionType
	}{{"read", client.ReadPermission}, {"write", client.WritePermission}, {"readwrite", client.ReadWritePermission}} {
		if o.c.Bool(f.name) {
			kind = f.t
			n++
		}
	}
	if n != 1 {
		return fail(exitError, "Please specify exactly one of --read, --write or --readwrite")
	}
	ctx, cancel := o.ctx()
	defer cancel()
	before, err := api.GetRole(ctx, name)
	if err != nil {
		return plain(err)
	}
	var after *client.Role
	if grant {
		after, err = api.GrantRoleKV(ctx, name, []string{p}, kind)
	} else {
		after, err = api.RevokeRoleKV(ctx, name, []string{p}, kind)
	}
	if err != nil {
		return plain(err)
	}
	if reflect.DeepEqual(after, before) {
		// upstream prints this without a line break before the next line
		if grant {
			fmt.Fprintf(o.e.stdout, "Role unchanged; already granted")
		} else {
			fmt.Fprintf(o.e.stdout, "Role unchanged; already revoked")
		}
	}
	fmt.Fprintf(o.e.stdout, "Role %s updated\n", name)
	return nil
}

func authCommand(e *env) cli.Command {
	toggle := func(enable bool) func(*cli.Context) error {
		return authAction(e, func(o opts, hc client.Client) error {
			if err := noArgs(o.c); err != nil {
				return err
			}
			ctx, cancel := o.ctx()
			defer cancel()
			api := client.NewAuthAPI(hc)
			var err error
			if enable {
				err = api.Enable(ctx)
			} else {
				err = api.Disable(ctx)
			}
			if err != nil {
				return plain(err)
			}
			if enable {
				fmt.Fprintln(o.e.stdout, "Authentication Enabled")
			} else {
				fmt.Fprintln(o.e.stdout, "Authentication Disabled")
			}
			return nil
		})
	}
	return cli.Command{Name: "auth", Usage: "overall auth controls", Subcommands: []cli.Command{
		{Name: "enable", Usage: "enable auth access controls", ArgsUsage: " ", Action: toggle(true)},
		{Name: "disable", Usage: "disable auth access controls", ArgsUsage: " ", Action: toggle(false)},
	}}
}
