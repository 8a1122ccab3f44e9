package ctlv2

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"time"

	"github.com/urfave/cli"
	client "go.etcd.io/etcd/client/v2"
)

var jsonMarshal = json.Marshal

// keysAction runs fn with the keys API of a synced client.
func keysAction(e *env, fn func(o opts, k client.KeysAPI) error) func(*cli.Context) error {
	return func(c *cli.Context) error {
		o := opts{c: c, e: e}
		hc, err := o.syncedClient()
		if err != nil {
			return err
		}
		return fn(o, client.NewKeysAPI(hc))
	}
}

// keyArg is the command's first argument, required.
func keyArg(c *cli.Context) (string, error) {
	if len(c.Args()) == 0 {
		return "", errors.New("key required")
	}
	return c.Args()[0], nil
}

// valueArg is argument i, else all of stdin.
func (e *env) valueArg(c *cli.Context, i int) (string, error) {
	if i < len(c.Args()) {
		return c.Args()[i], nil
	}
	b, err := io.ReadAll(e.stdin)
	if err != nil || len(b) == 0 {
		return "", errors.New("value required")
	}
	return string(b), nil
}

// keyAndValue reads <key> <value> for set, mk and update.
func (o opts) keyAndValue() (string, string, error) {
	key, err := keyArg(o.c)
	if err != nil {
		return "", "", o.errorOut(exitBadArgs, err)
	}
	value, err := o.e.valueArg(o.c, 1)
	if err != nil {
		return "", "", o.errorOut(exitBadArgs, err)
	}
	return key, value, nil
}

// print shows a response in the -o format, as upstream's v2 mode.
func (o opts) print(resp *client.Response) {
	w := o.e.stdout
	switch o.output() {
	case "simple":
		if resp.Action != "delete" {
			fmt.Fprintln(w, resp.Node.Value)
		} else {
			fmt.Fprintln(w, "PrevNode.Value:", resp.PrevNode.Value)
		}
	case "extended":
		fmt.Fprintln(w, "Key:", resp.Node.Key)
		fmt.Fprintln(w, "Created-Index:", resp.Node.CreatedIndex)
		fmt.Fprintln(w, "Modified-Index:", resp.Node.ModifiedIndex)
		if resp.PrevNode != nil {
			fmt.Fprintln(w, "PrevNode.Value:", resp.PrevNode.Value)
		}
		fmt.Fprintln(w, "TTL:", resp.Node.TTL)
		fmt.Fprintln(w, "Index:", resp.Index)
		if resp.Action != "delete" {
			fmt.Fprintln(w, "")
			fmt.Fprintln(w, resp.Node.Value)
		}
	case "json":
		b, err := json.Marshal(resp)
		if err != nil {
			fmt.Fprintln(o.e.stderr, err)
			return
		}
		fmt.Fprintln(w, string(b))
	default:
		fmt.Fprintln(o.e.stderr, "Unsupported output format:", o.output())
	}
}

func ttlFlag() cli.IntFlag {
	return cli.IntFlag{Name: "ttl", Value: 0, Usage: "key time-to-live in seconds"}
}

func seconds(n int) time.Duration { return time.Duration(n) * time.Second }

// request runs one call under the total timeout and prints its response.
func (o opts) request(call func(ctx context.Context) (*client.Response, error)) error {
	ctx, cancel := o.ctx()
	resp, err := call(ctx)
	cancel()
	if err != nil {
		return o.errorOut(exitServerError, err)
	}
	o.print(resp)
	return nil
}

func setCommand(e *env) cli.Command {
	return cli.Command{Name: "set", Usage: "set the value of a key", ArgsUsage: "<key> <value>",
		Description: "Set sets the value of a key.\n\n   When <value> begins with '-', <value> is interpreted as a flag.\n   Insert '--' for workaround:\n\n   $ set -- <key> <value>",
		Flags: []cli.Flag{ttlFlag(),
			cli.StringFlag{Name: "swap-with-value", Usage: "previous value"},
			cli.IntFlag{Name: "swap-with-index", Value: 0, Usage: "previous index"}},
		Action: keysAction(e, func(o opts, k client.KeysAPI) error {
			key, value, err := o.keyAndValue()
			if err != nil {
				return err
			}
			return o.request(func(ctx context.Context) (*client.Response, error) {
				return k.Set(ctx, key, value, &client.SetOptions{TTL: seconds(o.c.Int("ttl")),
					PrevIndex: uint64(o.c.Int("swap-with-index")), PrevValue: o.c.String("swap-with-value")})
			})
		})}
}

func mkCommand(e *env) cli.Command {
	return cli.Command{Name: "mk", Usage: "make a new key with a given value", ArgsUsage: "<key> <value>",
		Flags: []cli.Flag{cli.BoolFlag{Name: "in-order", Usage: "create in-order key under directory <key>"}, ttlFlag()},
		Action: keysAction(e, func(o opts, k client.KeysAPI) error {
			key, value, err := o.keyAndValue()
			if err != nil {
				return err
			}
			ttl := seconds(o.c.Int("ttl"))
			return o.request(func(ctx context.Context) (*client.Response, error) {
				if o.c.Bool("in-order") {
					return k.CreateInOrder(ctx, key, value, &client.CreateInOrderOptions{TTL: ttl})
				}
				// Only when the key is new: mk never overwrites.
				return k.Set(ctx, key, value, &client.SetOptions{TTL: ttl, PrevExist: client.PrevNoExist})
			})
		})}
}

func mkdirCommand(e *env) cli.Command {
	return cli.Command{Name: "mkdir", Usage: "make a new directory", ArgsUsage: "<key>",
		Flags: []cli.Flag{ttlFlag()},
		Action: keysAction(e, func(o opts, k client.KeysAPI) error {
			return o.dirSet(k, client.PrevNoExist)
		})}
}

func setdirCommand(e *env) cli.Command {
	return cli.Command{Name: "setdir", Usage: "create a new directory or update an existing directory TTL", ArgsUsage: "<key>",
		Flags: []cli.Flag{ttlFlag()},
		Action: keysAction(e, func(o opts, k client.KeysAPI) error {
			return o.dirSet(k, client.PrevIgnore)
		})}
}

func updatedirCommand(e *env) cli.Command {
	return cli.Command{Name: "updatedir", Usage: "update an existing directory", ArgsUsage: "<key> <value>",
		Flags: []cli.Flag{ttlFlag()},
		Action: keysAction(e, func(o opts, k client.KeysAPI) error {
			return o.dirSet(k, client.PrevExist)
		})}
}

// dirSet creates, sets or updates a directory (as exist says); the simple output prints nothing.
func (o opts) dirSet(k client.KeysAPI, exist client.PrevExistType) error {
	key, err := keyArg(o.c)
	if err != nil {
		return o.errorOut(exitBadArgs, err)
	}
	ctx, cancel := o.ctx()
	resp, err := k.Set(ctx, key, "", &client.SetOptions{TTL: seconds(o.c.Int("ttl")), Dir: true, PrevExist: exist})
	cancel()
	if err != nil {
		return o.errorOut(exitServerError, err)
	}
	if o.output() != "simple" {
		o.print(resp)
	}
	return nil
}

func updateCommand(e *env) cli.Command {
	return cli.Command{Name: "update", Usage: "update an existing key with a given value", ArgsUsage: "<key> <value>",
		Flags: []cli.Flag{ttlFlag()},
		Action: keysAction(e, func(o opts, k client.KeysAPI) error {
			key, value, err := o.keyAndValue()
			if err != nil {
				return err
			}
			return o.request(func(ctx context.Context) (*client.Response, error) {
				return k.Set(ctx, key, value, &client.SetOptions{TTL: seconds(o.c.Int("ttl")), PrevExist: client.PrevExist})
			})
		})}
}

func rmCommand(e *env) cli.Command {
	return cli.Command{Name: "rm", Usage: "remove a key or a directory", ArgsUsage: "<key>",
		Flags: []cli.Flag{
			cli.BoolFlag{Name: "dir", Usage: "removes the key if it is an empty directory or a key-value pair"},
			cli.BoolFlag{Name: "recursive, r", Usage: "removes the key and all child keys(if it is a directory)"},
			cli.StringFlag{Name: "with-value", Usage: "previous value"},
			cli.IntFlag{Name: "with-index", Value: 0, Usage: "previous index"}},
		Action: keysAction(e, func(o opts, k client.KeysAPI) error {
			return o.remove(k, &client.DeleteOptions{PrevIndex: uint64(o.c.Int("with-index")),
				PrevValue: o.c.String("with-value"), Dir: o.c.Bool("dir"), Recursive: o.c.Bool("recursive")})
		})}
}

// remove deletes the key argument; the simple output prints nothing for a directory.
func (o opts) remove(k client.KeysAPI, opts *client.DeleteOptions) error {
	key, err := keyArg(o.c)
	if err != nil {
		return o.errorOut(exitBadArgs, err)
	}
	ctx, cancel := o.ctx()
	resp, err := k.Delete(ctx, key, opts)
	cancel()
	if err != nil {
		return o.errorOut(exitServerError, err)
	}
	if !resp.Node.Dir || o.output() != "simple" {
		o.print(resp)
	}
	return nil
}

func rmdirCommand(e *env) cli.Command {
	return cli.Command{Name: "rmdir", Usage: "removes the key if it is an empty directory or a key-value pair", ArgsUsage: "<key>",
		Action: keysAction(e, func(o opts, k client.KeysAPI) error {
			return o.remove(k, &client.DeleteOptions{Dir: true})
		})}
}

func getCommand(e *env) cli.Command {
	return cli.Command{Name: "get", Usage: "retrieve the value of a key", ArgsUsage: "<key>",
		Flags: []cli.Flag{cli.BoolFlag{Name: "sort", Usage: "returns result in sorted order"},
			cli.BoolFlag{Name: "quorum, q", Usage: "require quorum for get request"}},
		Action: keysAction(e, func(o opts, k client.KeysAPI) error {
			key, err := keyArg(o.c)
			if err != nil {
				return o.errorOut(exitBadArgs, err)
			}
			ctx, cancel := o.ctx()
			resp, err := k.Get(ctx, key, &client.GetOptions{Sort: o.c.Bool("sort"), Quorum: o.c.Bool("quorum")})
			cancel()
			if err != nil {
				return o.errorOut(exitServerError, err)
			}
			if resp.Node.Dir {
				return fail(exitError, "%s: is a directory", resp.Node.Key)
			}
			o.print(resp)
			return nil
		})}
}

func lsCommand(e *env) cli.Command {
	return cli.Command{Name: "ls", Usage: "retrieve a directory", ArgsUsage: "[key]",
		Flags: []cli.Flag{cli.BoolFlag{Name: "sort", Usage: "returns result in sorted order"},
			cli.BoolFlag{Name: "recursive, r", Usage: "returns all key names recursively for the given path"},
			cli.BoolFlag{Name: "p", Usage: "append slash (/) to directories"},
			cli.BoolFlag{Name: "quorum, q", Usage: "require quorum for get request"}},
		Action: keysAction(e, func(o opts, k client.KeysAPI) error {
			key := "/"
			if len(o.c.Args()) > 0 {
				key = o.c.Args()[0]
			}
			ctx, cancel := o.ctx()
			resp, err := k.Get(ctx, key, &client.GetOptions{Sort: o.c.Bool("sort"), Recursive: o.c.Bool("recursive"), Quorum: o.c.Bool("quorum")})
			cancel()
			if err != nil {
				return o.errorOut(exitServerError, err)
			}
			if o.output() != "simple" {
				o.print(resp)
				return nil
			}
			if !resp.Node.Dir {
				fmt.Fprintln(o.e.stdout, resp.Node.Key)
			}
			for _, n := range resp.Node.Nodes {
				o.listNode(n)
			}
			return nil
		})}
}

func (o opts) listNode(n *client.Node) {
	if n.Dir && o.c.Bool("p") {
		fmt.Fprintf(o.e.stdout, "%v/\n", n.Key)
	} else {
		fmt.Fprintln(o.e.stdout, n.Key)
	}
	for _, c := range n.Nodes {
		o.listNode(c)
	}
}

func watchFlags() []cli.Flag {
	return []cli.Flag{cli.BoolFlag{Name: "forever, f", Usage: "forever watch a key until CTRL+C"},
		cli.IntFlag{Name: "after-index", Value: 0, Usage: "watch after the given index"},
		cli.BoolFlag{Name: "recursive, r", Usage: "returns all values for key and child keys"}}
}

// untilInterrupt makes CTRL+C end the process with status 0, as upstream's watch commands.
func untilInterrupt() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	go func() {
		<-ch
		os.Exit(0)
	}()
}

func watchCommand(e *env) cli.Command {
	return cli.Command{Name: "watch", Usage: "watch a key for changes", ArgsUsage: "<key>", Flags: watchFlags(),
		Action: keysAction(e, func(o opts, k client.KeysAPI) error {
			key, err := keyArg(o.c)
			if err != nil {
				return o.errorOut(exitBadArgs, err)
			}
			recursive := o.c.Bool("recursive")
			w := k.Watcher(key, &client.WatcherOptions{AfterIndex: uint64(o.c.Int("after-index")), Recursive: recursive})
			untilInterrupt()
			for {
				resp, err := w.Next(context.Background())
				if err != nil {
					return o.errorOut(exitServerError, err)
				}
				if resp.Node.Dir {
					continue
				}
				if recursive {
					fmt.Fprintf(o.e.stdout, "[%s] %s\n", resp.Action, resp.Node.Key)
				}
				o.print(resp)
				if !o.c.Bool("forever") {
					return nil
				}
			}
		})}
}

func execWatchCommand(e *env) cli.Command {
	return cli.Command{Name: "exec-watch", Usage: "watch a key for changes and exec an executable", ArgsUsage: "<key> <command> [args...]",
		Flags: []cli.Flag{cli.IntFlag{Name: "after-index", Value: 0, Usage: "watch after the given index"},
			cli.BoolFlag{Name: "recursive, r", Usage: "watch all values for key and child keys"}},
		Action: keysAction(e, func(o opts, k client.KeysAPI) error {
			args := o.c.Args()
			if len(args) < 2 {
				return o.errorOut(exitBadArgs, errors.New("key and command to exec required"))
			}
			key, cmdArgs := args[0], args[1:]
			w := k.Watcher(key, &client.WatcherOptions{AfterIndex: uint64(o.c.Int("after-index")), Recursive: o.c.Bool("recursive")})
			untilInterrupt()
			for {
				resp, err := w.Next(context.Background())
				if err != nil {
					return o.errorOut(exitServerError, err)
				}
				if resp.Node.Dir {
					fmt.Fprintf(o.e.stderr, "Ignored dir %s change\n", resp.Node.Key)
					continue
				}
				cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...)
				cmd.Env = append(os.Environ(), "ETCD_WATCH_ACTION="+resp.Action, "ETCD_WATCH_MODIFIED_INDEX="+fmt.Sprint(resp.Node.ModifiedIndex),
					"ETCD_WATCH_KEY="+resp.Node.Key, "ETCD_WATCH_VALUE="+resp.Node.Value)
				cmd.Stdout, cmd.Stderr = o.e.stdout, o.e.stderr
				if err := cmd.Run(); err != nil {
					fmt.Fprintln(o.e.stderr, err.Error())
				}
			}
		})}
}
