package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/term"

	"etcdx/etcdctl/cli"
	"etcdx/etcdctl/printer"
)

// authCall runs one Auth request. Like upstream, user and role commands are not bounded by
// --command-timeout (auth enable, disable and status are).
func authCall[T any](e *env, f func(ctx context.Context, c *clientv3.Client) (T, error)) (T, error) {
	var zero T
	c, err := e.cl()
	if err != nil {
		return zero, err
	}
	return f(context.TODO(), c)
}

func authCommand(g *global) *cli.Command {
	noArgs := func(name string, body func(e *env) error) func(*cli.Ctx) error {
		return run(g, func(e *env) error {
			if len(e.Args) != 0 {
				return cli.BadArgs("auth %s command does not accept any arguments", name)
			}
			return body(e)
		})
	}
	return &cli.Command{Name: "auth", Args: "<enable or disable>", Short: "Enable or disable authentication", Subs: []*cli.Command{
		{Name: "enable", Short: "Enables authentication", Run: noArgs("enable", func(e *env) error {
			_, err := call(e, func(ctx context.Context, c *clientv3.Client) (any, error) {
				for {
					_, err := c.AuthEnable(ctx)
					if err == nil || !errors.Is(err, rpctypes.ErrRootRoleNotExist) {
						return nil, err
					}
					// As upstream etcdctl: give root the root role (creating it), then retry.
					if _, err := c.RoleAdd(ctx, "root"); err != nil {
						return nil, err
					}
					if _, err := c.UserGrantRole(ctx, "root", "root"); err != nil {
						return nil, err
					}
				}
			})
			if err != nil {
				return err
			}
			fmt.Fprintln(e.Stdout, "Authentication Enabled")
			return nil
		})},
		{Name: "disable", Short: "Disables authentication", Run: noArgs("disable", func(e *env) error {
			if _, err := call(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.AuthDisableResponse, error) {
				return c.AuthDisable(ctx)
			}); err != nil {
				return err
			}
			fmt.Fprintln(e.Stdout, "Authentication Disabled")
			return nil
		})},
		{Name: "status", Short: "Returns authentication status", Run: noArgs("status", func(e *env) error {
			resp, err := call(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.AuthStatusResponse, error) {
				return c.AuthStatus(ctx)
			})
			if err != nil {
				return err
			}
			return e.out.Print(printer.AuthStatus{R: (*pb.AuthStatusResponse)(resp)})
		})},
	}}
}

// firstWordOfLine reads standard input up to the end of its first line (or its end) and
// returns that line's first word, as upstream's fmt.Scanf("%s") does: an empty first line is an
// empty password, not a wait for a later line. It reads a byte at a time, leaving the rest.
func firstWordOfLine(r io.Reader) string {
	var line []byte
	b := make([]byte, 1)
	for {
		n, err := r.Read(b)
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			line = append(line, b[0])
		}
		if err != nil {
			break
		}
	}
	if f := strings.Fields(string(line)); len(f) > 0 {
		return f[0]
	}
	return ""
}

// readPassword is how user add and passwd learn a password: with --interactive (the default)
// asked twice on the terminal; without, the first word of standard input.
func (e *env) readPassword(name string, interactive bool) (string, error) {
	if !interactive {
		return firstWordOfLine(e.Stdin), nil
	}
	f, ok := terminal(e.Stdin)
	if !ok {
		return "", cli.BadArgs("failed to ask password: standard input is not a terminal (use --interactive=false to read it from standard input)")
	}
	ask := func(prompt string) (string, error) {
		fmt.Fprint(e.Stderr, prompt)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.Stderr)
		if err != nil {
			return "", cli.BadArgs("failed to ask password: %v", err)
		}
		return string(b), nil
	}
	pw, err := ask(fmt.Sprintf("Password of %s: ", name))
	if err != nil {
		return "", err
	}
	if pw == "" {
		return "", cli.BadArgs("empty password")
	}
	again, err := ask(fmt.Sprintf("Type password of %s again for confirmation: ", name))
	if err != nil {
		return "", err
	}
	if pw != again {
		return "", cli.BadArgs("given passwords are different")
	}
	return pw, nil
}

func userCommand(g *global) *cli.Command {
	var interactive, noPassword, detail bool
	var newPassword string
	interactiveFlag := func(usage string) func(fs *pflag.FlagSet) {
		return func(fs *pflag.FlagSet) { fs.BoolVar(&interactive, "interactive", true, usage) }
	}
	args := func(n int, msg string, body func(e *env) error) func(*cli.Ctx) error {
		return run(g, func(e *env) error {
			if len(e.Args) != n {
				return cli.BadArgs("%s", msg)
			}
			return body(e)
		})
	}
	message := func(line string, r interface{ Marshal() ([]byte, error) }, h *pb.ResponseHeader) printer.AuthMessage {
		return printer.AuthMessage{Line: line, R: r, Header: h}
	}
	return &cli.Command{Name: "user", Args: "<subcommand>", Short: "User related commands", Subs: []*cli.Command{
		{Name: "add", Args: "<user name or user:password> [options]", Short: "Adds a new user",
			Flags: func(fs *pflag.FlagSet) {
				fs.BoolVar(&interactive, "interactive", true, "Read password from stdin instead of interactive terminal")
				fs.StringVar(&newPassword, "new-user-password", "", "Supply password from the command line flag")
				fs.BoolVar(&noPassword, "no-password", false, "Create a user without password (CN based auth only)")
			},
			Run: args(1, "user add command requires user name as its argument", func(e *env) error {
				name, password := e.Args[0], ""
				opts := &clientv3.UserAddOptions{NoPassword: noPassword}
				if !noPassword {
					switch u, p, ok := strings.Cut(e.Args[0], ":"); {
					case newPassword != "":
						password = newPassword
					case ok:
						if u == "" {
							return cli.BadArgs("empty user name is not allowed")
						}
						name, password = u, p
					default:
						var err error
						if password, err = e.readPassword(name, interactive); err != nil {
							return err
						}
					}
				}
				resp, err := authCall(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.AuthUserAddResponse, error) {
					return c.UserAddWithOptions(ctx, name, password, opts)
				})
				if err != nil {
					return err
				}
				return e.out.Print(message("User "+name+" created", (*pb.AuthUserAddResponse)(resp), resp.Header))
			})},
		{Name: "delete", Args: "<user name>", Short: "Deletes a user",
			Run: args(1, "user delete command requires user name as its argument", func(e *env) error {
				resp, err := authCall(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.AuthUserDeleteResponse, error) {
					return c.UserDelete(ctx, e.Args[0])
				})
				if err != nil {
					return err
				}
				return e.out.Print(message("User "+e.Args[0]+" deleted", (*pb.AuthUserDeleteResponse)(resp), resp.Header))
			})},
		{Name: "get", Args: "<user name> [options]", Short: "Gets detailed information of a user",
			Flags: func(fs *pflag.FlagSet) {
				fs.BoolVar(&detail, "detail", false, "Show permissions of roles granted to the user")
			},
			Run: args(1, "user get command requires user name as its argument", func(e *env) error {
				name := e.Args[0]
				resp, err := authCall(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.AuthUserGetResponse, error) {
					return c.UserGet(ctx, name)
				})
				if err != nil {
					return err
				}
				if !detail {
					return e.out.Print(printer.UserGet{Name: name, R: (*pb.AuthUserGetResponse)(resp)})
				}
				fmt.Fprintf(e.Stdout, "User: %s\n", name)
				for _, role := range resp.Roles {
					fmt.Fprintln(e.Stdout)
					rr, err := authCall(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.AuthRoleGetResponse, error) {
						return c.RoleGet(ctx, role)
					})
					if err != nil {
						return err
					}
					if err := e.out.Print(printer.RoleGet{Name: role, R: (*pb.AuthRoleGetResponse)(rr)}); err != nil {
						return err
					}
				}
				return nil
			})},
		{Name: "list", Short: "Lists all users",
			Run: args(0, "user list command requires no arguments", func(e *env) error {
				resp, err := authCall(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.AuthUserListResponse, error) {
					return c.UserList(ctx)
				})
				if err != nil {
					return err
				}
				return e.out.Print(printer.List(printer.Names{Names: resp.Users, R: (*pb.AuthUserListResponse)(resp), Header: resp.Header}))
			})},
		{Name: "passwd", Args: "<user name> [options]", Short: "Changes password of user",
			Flags: interactiveFlag("If true, read password from stdin instead of interactive terminal"),
			Run: args(1, "user passwd command requires user name as its argument", func(e *env) error {
				password, err := e.readPassword(e.Args[0], interactive)
				if err != nil {
					return err
				}
				resp, err := authCall(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.AuthUserChangePasswordResponse, error) {
					return c.UserChangePassword(ctx, e.Args[0], password)
				})
				if err != nil {
					return err
				}
				return e.out.Print(message("Password updated", (*pb.AuthUserChangePasswordResponse)(resp), resp.Header))
			})},
		{Name: "grant-role", Args: "<user name> <role name>", Short: "Grants a role to a user",
			Run: args(2, "user grant command requires user name and role name as its argument", func(e *env) error {
				resp, err := authCall(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.AuthUserGrantRoleResponse, error) {
					return c.UserGrantRole(ctx, e.Args[0], e.Args[1])
				})
				if err != nil {
					return err
				}
				return e.out.Print(message(fmt.Sprintf("Role %s is granted to user %s", e.Args[1], e.Args[0]), (*pb.AuthUserGrantRoleResponse)(resp), resp.Header))
			})},
		{Name: "revoke-role", Args: "<user name> <role name>", Short: "Revokes a role from a user",
			Run: args(2, "user revoke-role requires user name and role name as its argument", func(e *env) error {
				resp, err := authCall(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.AuthUserRevokeRoleResponse, error) {
					return c.UserRevokeRole(ctx, e.Args[0], e.Args[1])
				})
				if err != nil {
					return err
				}
				return e.out.Print(message(fmt.Sprintf("Role %s is revoked from user %s", e.Args[1], e.Args[0]), (*pb.AuthUserRevokeRoleResponse)(resp), resp.Header))
			})},
	}}
}

// permRange is upstream's reading of a permission's keys: an empty key means "\x00" (and,
// with --prefix or --from-key, every key); --prefix and --from-key turn one key into a range.
func permRange(args []string, prefix, fromKey bool) (key, end string, err error) {
	exclusive := cli.BadArgs("--from-key and --prefix flags are mutually exclusive")
	key = args[0]
	switch {
	case key == "":
		if prefix && fromKey {
			return "", "", exclusive
		}
		if prefix || fromKey {
			end = "\x00"
		}
		return "\x00", end, nil
	case len(args) == 1 && prefix:
		if fromKey {
			return "", "", exclusive
		}
		return key, clientv3.GetPrefixRangeEnd(key), nil
	case len(args) == 1 && fromKey:
		return key, "\x00", nil
	case len(args) == 1:
		return key, "", nil
	case prefix:
		return "", "", cli.BadArgs("unexpected endkey argument with --prefix flag")
	case fromKey:
		return "", "", cli.BadArgs("unexpected endkey argument with --from-key flag")
	}
	return key, args[1], nil
}

func roleCommand(g *global) *cli.Command {
	var prefix, fromKey bool
	permFlags := func(verb string) func(fs *pflag.FlagSet) {
		return func(fs *pflag.FlagSet) {
			fs.BoolVar(&prefix, "prefix", false, verb+" a prefix permission")
			fs.BoolVar(&fromKey, "from-key", false, verb+" a permission of keys that are greater than or equal to the given key using byte compare")
		}
	}
	oneRole := func(msg string, body func(e *env, role string) error) func(*cli.Ctx) error {
		return run(g, func(e *env) error {
			if len(e.Args) != 1 {
				return cli.BadArgs("%s", msg)
			}
			return body(e, e.Args[0])
		})
	}
	return &cli.Command{Name: "role", Args: "<subcommand>", Short: "Role related commands", Subs: []*cli.Command{
		{Name: "add", Args: "<role name>", Short: "Adds a new role",
			Run: oneRole("role add command requires role name as its argument", func(e *env, role string) error {
				resp, err := authCall(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.AuthRoleAddResponse, error) {
					return c.RoleAdd(ctx, role)
				})
				if err != nil {
					return err
				}
				return e.out.Print(printer.AuthMessage{Line: "Role " + role + " created", R: (*pb.AuthRoleAddResponse)(resp), Header: resp.Header})
			})},
		{Name: "delete", Args: "<role name>", Short: "Deletes a role",
			Run: oneRole("role delete command requires role name as its argument", func(e *env, role string) error {
				resp, err := authCall(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.AuthRoleDeleteResponse, error) {
					return c.RoleDelete(ctx, role)
				})
				if err != nil {
					return err
				}
				return e.out.Print(printer.AuthMessage{Line: "Role " + role + " deleted", R: (*pb.AuthRoleDeleteResponse)(resp), Header: resp.Header})
			})},
		{Name: "get", Args: "<role name>", Short: "Gets detailed information of a role",
			Run: oneRole("role get command requires role name as its argument", func(e *env, role string) error {
				resp, err := authCall(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.AuthRoleGetResponse, error) {
					return c.RoleGet(ctx, role)
				})
				if err != nil {
					return err
				}
				return e.out.Print(printer.RoleGet{Name: role, R: (*pb.AuthRoleGetResponse)(resp)})
			})},
		{Name: "list", Short: "Lists all roles",
			Run: run(g, func(e *env) error {
				if len(e.Args) != 0 {
					return cli.BadArgs("role list command requires no arguments")
				}
				resp, err := authCall(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.AuthRoleListResponse, error) {
					return c.RoleList(ctx)
				})
				if err != nil {
					return err
				}
				return e.out.Print(printer.List(printer.Names{Names: resp.Roles, R: (*pb.AuthRoleListResponse)(resp), Header: resp.Header, Field: "Roles"}))
			})},
		{Name: "grant-permission", Args: "[options] <role name> <permission type> <key> [endkey]", Short: "Grants a key to a role",
			Flags: permFlags("grant"),
			Run: run(g, func(e *env) error {
				if len(e.Args) < 3 {
					return cli.BadArgs("role grant command requires role name, permission type, and key [endkey] as its argument")
				}
				perm, err := clientv3.StrToPermissionType(e.Args[1])
				if err != nil {
					return cli.BadArgs("%v", err)
				}
				key, end, err := permRange(e.Args[2:], prefix, fromKey)
				if err != nil {
					return err
				}
				resp, err := authCall(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.AuthRoleGrantPermissionResponse, error) {
					return c.RoleGrantPermission(ctx, e.Args[0], key, end, perm)
				})
				if err != nil {
					return err
				}
				return e.out.Print(printer.AuthMessage{Line: "Role " + e.Args[0] + " updated", R: (*pb.AuthRoleGrantPermissionResponse)(resp), Header: resp.Header})
			})},
		{Name: "revoke-permission", Args: "<role name> <key> [endkey]", Short: "Revokes a key from a role",
			Flags: permFlags("revoke"),
			Run: run(g, func(e *env) error {
				if len(e.Args) < 2 {
					return cli.BadArgs("role revoke-permission command requires role name and key [endkey] as its argument")
				}
				key, end, err := permRange(e.Args[1:], prefix, fromKey)
				if err != nil {
					return err
				}
				resp, err := authCall(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.AuthRoleRevokePermissionResponse, error) {
					return c.RoleRevokePermission(ctx, e.Args[0], key, end)
				})
				if err != nil {
					return err
				}
				// Upstream words it with the key as typed.
				line := fmt.Sprintf("Permission of key %s is revoked from role %s", e.Args[1], e.Args[0])
				switch {
				case end == "\x00":
					line = fmt.Sprintf("Permission of range [%s, <open ended> is revoked from role %s", e.Args[1], e.Args[0])
				case end != "":
					line = fmt.Sprintf("Permission of range [%s, %s) is revoked from role %s", e.Args[1], end, e.Args[0])
				}
				return e.out.Print(printer.AuthMessage{Line: line, R: (*pb.AuthRoleRevokePermissionResponse)(resp), Header: resp.Header})
			})},
	}}
}
