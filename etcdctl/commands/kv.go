package commands

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/etcdctl/cli"
	"etcdx/etcdctl/printer"
	"etcdx/pkg/rangestream"
)

// getOptions are get's flags; txn reads the same flags in its request lines.
type getOptions struct {
	consistency, order, sortBy                    string
	limit, rev                                    int64
	prefix, fromKey, keysOnly, countOnly, valOnly bool
	minCreate, maxCreate, minMod, maxMod          int64
	// revFilters offers the --min/--max-*-rev flags (from 3.6).
	revFilters bool
}

func (o *getOptions) register(fs *pflag.FlagSet) {
	fs.StringVar(&o.consistency, "consistency", "l", "Linearizable(l) or Serializable(s)")
	fs.StringVar(&o.order, "order", "", "Order of results; ASCEND or DESCEND (ASCEND by default)")
	fs.StringVar(&o.sortBy, "sort-by", "", "Sort target; CREATE, KEY, MODIFY, VALUE, or VERSION")
	fs.Int64Var(&o.limit, "limit", 0, "Maximum number of results")
	fs.BoolVar(&o.prefix, "prefix", false, "Get keys with matching prefix")
	fs.BoolVar(&o.fromKey, "from-key", false, "Get keys that are greater than or equal to the given key using byte compare")
	fs.Int64Var(&o.rev, "rev", 0, "Specify the kv revision")
	fs.BoolVar(&o.keysOnly, "keys-only", false, "Get only the keys")
	fs.BoolVar(&o.countOnly, "count-only", false, "Get only the count")
	fs.BoolVar(&o.valOnly, "print-value-only", false, `Only write values when using the "simple" output format`)
	if !o.revFilters {
		return
	}
	fs.Int64Var(&o.minCreate, "min-create-rev", 0, "Minimum create revision")
	fs.Int64Var(&o.maxCreate, "max-create-rev", 0, "Maximum create revision")
	fs.Int64Var(&o.minMod, "min-mod-rev", 0, "Minimum modification revision")
	fs.Int64Var(&o.maxMod, "max-mod-rev", 0, "Maximum modification revision")
}

// op turns the arguments and flags into a range request.
func (o *getOptions) op(args []string) (string, []clientv3.OpOption, error) {
	if len(args) == 0 {
		return "", nil, cli.BadArgs("get command needs one argument as key and an optional argument as range_end")
	}
	if o.prefix && o.fromKey {
		return "", nil, cli.BadArgs("`--prefix` and `--from-key` cannot be set at the same time, choose one")
	}
	if o.keysOnly && o.countOnly {
		return "", nil, cli.BadArgs("`--keys-only` and `--count-only` cannot be set at the same time, choose one")
	}
	var opts []clientv3.OpOption
	if o.consistency == "s" {
		opts = append(opts, clientv3.WithSerializable())
	}
	key := args[0]
	if len(args) > 1 {
		if o.prefix || o.fromKey {
			return "", nil, cli.BadArgs("too many arguments, only accept one argument when `--prefix` or `--from-key` is set")
		}
		opts = append(opts, clientv3.WithRange(args[1]))
	}
	opts = append(opts, clientv3.WithLimit(o.limit))
	if o.rev > 0 {
		opts = append(opts, clientv3.WithRev(o.rev))
	}
	order := clientv3.SortNone
	switch strings.ToUpper(o.order) {
	case "ASCEND":
		order = clientv3.SortAscend
	case "DESCEND":
		order = clientv3.SortDescend
	case "":
	default:
		return "", nil, &cli.Error{Code: cli.ExitBadFeature, Err: fmt.Errorf("bad sort order %v", o.order)}
	}
	targets := map[string]clientv3.SortTarget{"": clientv3.SortByKey, "KEY": clientv3.SortByKey, "CREATE": clientv3.SortByCreateRevision,
		"MODIFY": clientv3.SortByModRevision, "VALUE": clientv3.SortByValue, "VERSION": clientv3.SortByVersion}
	target, ok := targets[strings.ToUpper(o.sortBy)]
	if !ok {
		return "", nil, &cli.Error{Code: cli.ExitBadFeature, Err: fmt.Errorf("bad sort target %v", o.sortBy)}
	}
	opts = append(opts, clientv3.WithSort(target, order))
	key, opts = rangeOpts(key, o.prefix, o.fromKey, opts)
	if o.keysOnly {
		opts = append(opts, clientv3.WithKeysOnly())
	}
	if o.countOnly {
		opts = append(opts, clientv3.WithCountOnly())
	}
	if o.minCreate > 0 {
		opts = append(opts, clientv3.WithMinCreateRev(o.minCreate))
	}
	if o.maxCreate > 0 {
		if o.minCreate > o.maxCreate {
			return "", nil, &cli.Error{Code: cli.ExitBadFeature, Err: fmt.Errorf("getMinCreateRev(=%v) > getMaxCreateRev(=%v)", o.minCreate, o.maxCreate)}
		}
		opts = append(opts, clientv3.WithMaxCreateRev(o.maxCreate))
	}
	if o.minMod > 0 {
		opts = append(opts, clientv3.WithMinModRev(o.minMod))
	}
	if o.maxMod > 0 {
		if o.minMod > o.maxMod {
			return "", nil, &cli.Error{Code: cli.ExitBadFeature, Err: fmt.Errorf("getMinModRev(=%v) > getMaxModRev(=%v)", o.minMod, o.maxMod)}
		}
		opts = append(opts, clientv3.WithMaxModRev(o.maxMod))
	}
	return key, opts, nil
}

func getCommand(g *global) *cli.Command {
	o := &getOptions{revFilters: g.atLeast("3.6")}
	var stream bool
	return &cli.Command{Name: "get", Args: "[options] <key> [range_end]", Short: "Gets the key or a range of keys",
		Flags: func(fs *pflag.FlagSet) {
			o.register(fs)
			if g.atLeast("3.7") {
				fs.BoolVar(&stream, "stream", false, "Use the RangeStream RPC")
			}
		},
		Run: run(g, func(e *env) error {
			key, opts, err := o.op(e.Args)
			if err != nil {
				return err
			}
			resp, err := call(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.GetResponse, error) {
				if stream {
					return o.getStream(ctx, c, clientv3.OpGet(key, opts...))
				}
				return c.Get(ctx, key, opts...)
			})
			if err != nil {
				return err
			}
			if o.countOnly && e.out.Format != "fields" {
				return cli.BadArgs("--count-only is only for `--write-out=fields`")
			}
			if o.valOnly && e.out.Format != "simple" {
				return cli.BadArgs("print-value-only is only for `--write-out=simple`")
			}
			return e.out.Print(printer.Get{R: (*pb.RangeResponse)(resp), ValueOnly: o.valOnly})
		}),
	}
}

// getStream reads op through the RangeStream RPC (3.7) and merges the chunks into the answer
// Range gives, as upstream's etcdctl get --stream does.
func (o *getOptions) getStream(ctx context.Context, c *clientv3.Client, op clientv3.Op) (*clientv3.GetResponse, error) {
	r := &pb.RangeRequest{Key: op.KeyBytes(), RangeEnd: op.RangeBytes(), Revision: op.Rev(), Limit: op.Limit(),
		Serializable: op.IsSerializable(), KeysOnly: op.IsKeysOnly(), CountOnly: op.IsCountOnly(),
		MinModRevision: op.MinModRev(), MaxModRevision: op.MaxModRev(), MinCreateRevision: op.MinCreateRev(), MaxCreateRevision: op.MaxCreateRev()}
	r.SortOrder = map[string]pb.RangeRequest_SortOrder{"ASCEND": pb.RangeRequest_ASCEND, "DESCEND": pb.RangeRequest_DESCEND}[strings.ToUpper(o.order)]
	r.SortTarget = map[string]pb.RangeRequest_SortTarget{"CREATE": pb.RangeRequest_CREATE, "MODIFY": pb.RangeRequest_MOD,
		"VALUE": pb.RangeRequest_VALUE, "VERSION": pb.RangeRequest_VERSION}[strings.ToUpper(o.sortBy)]
	if r.SortTarget == pb.RangeRequest_KEY && r.SortOrder == pb.RangeRequest_ASCEND {
		r.SortOrder = pb.RangeRequest_NONE // the server's own order, as the client library sends it
	}
	s, err := rangestream.Open(ctx, c.ActiveConnection(), r)
	if err != nil {
		return nil, err
	}
	resp, err := rangestream.Collect(s)
	if err != nil {
		return nil, err
	}
	return (*clientv3.GetResponse)(resp), nil
}

// rangeOpts applies --prefix and --from-key; an empty key with either means every key.
func rangeOpts(key string, prefix, fromKey bool, opts []clientv3.OpOption) (string, []clientv3.OpOption) {
	switch {
	case prefix && key == "", fromKey && key == "":
		return "\x00", append(opts, clientv3.WithFromKey())
	case prefix:
		return key, append(opts, clientv3.WithPrefix())
	case fromKey:
		return key, append(opts, clientv3.WithFromKey())
	}
	return key, opts
}

// argOrStdin returns args[i], or all of stdin when there is no such argument.
func argOrStdin(args []string, stdin io.Reader, i int) (string, error) {
	if i < len(args) {
		return args[i], nil
	}
	b, err := io.ReadAll(stdin)
	if err != nil || len(b) == 0 {
		return "", fmt.Errorf("no available argument and stdin")
	}
	return string(b), nil
}

// putOptions are put's flags; txn reads the same flags in its request lines.
type putOptions struct {
	lease                          string
	prevKV, ignoreVal, ignoreLease bool
}

func (o *putOptions) register(fs *pflag.FlagSet) {
	fs.StringVar(&o.lease, "lease", "0", "lease ID (in hexadecimal) to attach to the key")
	fs.BoolVar(&o.prevKV, "prev-kv", false, "return the previous key-value pair before modification")
	fs.BoolVar(&o.ignoreVal, "ignore-value", false, "updates the key using its current value")
	fs.BoolVar(&o.ignoreLease, "ignore-lease", false, "updates the key using its current lease")
}

// op turns the arguments (the value from stdin when absent) and flags into a put request.
func (o *putOptions) op(args []string, stdin io.Reader) (string, string, []clientv3.OpOption, error) {
	if len(args) == 0 {
		return "", "", nil, cli.BadArgs("put command needs 1 argument and input from stdin or 2 arguments")
	}
	if o.ignoreVal && len(args) > 1 {
		return "", "", nil, cli.BadArgs("put command needs only 1 argument when 'ignore-value' is set")
	}
	var value string
	if !o.ignoreVal {
		v, err := argOrStdin(args, stdin, 1)
		if err != nil {
			return "", "", nil, cli.BadArgs("put command needs 1 argument and input from stdin or 2 arguments")
		}
		value = v
	}
	id, err := strconv.ParseInt(o.lease, 16, 64)
	if err != nil {
		return "", "", nil, cli.BadArgs("bad lease ID (%v), expecting ID in Hex", err)
	}
	var opts []clientv3.OpOption
	if id != 0 {
		opts = append(opts, clientv3.WithLease(clientv3.LeaseID(id)))
	}
	if o.prevKV {
		opts = append(opts, clientv3.WithPrevKV())
	}
	if o.ignoreVal {
		opts = append(opts, clientv3.WithIgnoreValue())
	}
	if o.ignoreLease {
		opts = append(opts, clientv3.WithIgnoreLease())
	}
	return args[0], value, opts, nil
}

func putCommand(g *global) *cli.Command {
	o := &putOptions{}
	return &cli.Command{Name: "put", Args: "[options] <key> <value> (<value> can also be given from stdin)", Short: "Puts the given key into the store", Long: putHelp,
		Flags: o.register,
		Run: run(g, func(e *env) error {
			key, value, opts, err := o.op(e.Args, e.Stdin)
			if err != nil {
				return err
			}
			resp, err := call(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.PutResponse, error) {
				return c.Put(ctx, key, value, opts...)
			})
			if err != nil {
				return err
			}
			return e.out.Print(printer.Put{R: (*pb.PutResponse)(resp)})
		}),
	}
}

// delOptions are del's flags; txn reads the same flags in its request lines.
type delOptions struct{ prefix, prevKV, fromKey, rangeOK bool }

func (o *delOptions) register(fs *pflag.FlagSet) {
	fs.BoolVar(&o.prefix, "prefix", false, "delete keys with matching prefix")
	fs.BoolVar(&o.prevKV, "prev-kv", false, "return deleted key-value pairs")
	fs.BoolVar(&o.fromKey, "from-key", false, "delete keys that are greater than or equal to the given key using byte compare")
	fs.BoolVar(&o.rangeOK, "range", false, "delete range of keys")
}

// op turns the arguments and flags into a delete request. A plain range without --range is
// announced on stderr and delayed 2 seconds, as upstream does.
func (o *delOptions) op(args []string, stderr io.Writer) (string, []clientv3.OpOption, error) {
	if len(args) == 0 || len(args) > 2 {
		return "", nil, cli.BadArgs("del command needs one argument as key and an optional argument as range_end")
	}
	if o.prefix && o.fromKey {
		return "", nil, cli.BadArgs("`--prefix` and `--from-key` cannot be set at the same time, choose one")
	}
	var opts []clientv3.OpOption
	key := args[0]
	if len(args) > 1 {
		if o.prefix || o.fromKey {
			return "", nil, cli.BadArgs("too many arguments, only accept one argument when `--prefix` or `--from-key` is set")
		}
		opts = append(opts, clientv3.WithRange(args[1]))
		if !o.rangeOK {
			fmt.Fprintf(stderr, "Warning: Keys between %q and %q will be deleted. Please interrupt the command within next 2 seconds to cancel. "+
				"You can provide `--range` flag to avoid the delay.\n", args[0], args[1])
			time.Sleep(2 * time.Second)
		}
	}
	key, opts = rangeOpts(key, o.prefix, o.fromKey, opts)
	if o.prevKV {
		opts = append(opts, clientv3.WithPrevKV())
	}
	return key, opts, nil
}

func delCommand(g *global) *cli.Command {
	o := &delOptions{}
	return &cli.Command{Name: "del", Args: "[options] <key> [range_end]", Short: "Removes the specified key or range of keys [key, range_end)",
		Flags: o.register,
		Run: run(g, func(e *env) error {
			key, opts, err := o.op(e.Args, e.Stderr)
			if err != nil {
				return err
			}
			resp, err := call(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.DeleteResponse, error) {
				return c.Delete(ctx, key, opts...)
			})
			if err != nil {
				return err
			}
			return e.out.Print(printer.Del{R: (*pb.DeleteRangeResponse)(resp)})
		}),
	}
}

func compactionCommand(g *global) *cli.Command {
	var physical bool
	return &cli.Command{Name: "compaction", Args: "[options] <revision>", Short: "Compacts the event history in etcd",
		Flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&physical, "physical", false, "'true' to wait for compaction to physically remove all old revisions")
		},
		Run: run(g, func(e *env) error {
			if len(e.Args) != 1 {
				return cli.BadArgs("compaction command needs 1 argument")
			}
			rev, err := strconv.ParseInt(e.Args[0], 10, 64)
			if err != nil {
				return err
			}
			var opts []clientv3.CompactOption
			if physical {
				opts = append(opts, clientv3.WithCompactPhysical())
			}
			if _, err := call(e, func(ctx context.Context, c *clientv3.Client) (*clientv3.CompactResponse, error) {
				return c.Compact(ctx, rev, opts...)
			}); err != nil {
				return err
			}
			// Upstream prints this line whatever the output format.
			fmt.Fprintln(e.Stdout, "compacted revision", rev)
			return nil
		}),
	}
}

// putHelp is upstream's long help of put.
const putHelp = `
Puts the given key into the store.

When <value> begins with '-', <value> is interpreted as a flag.
Insert '--' for workaround:

$ put <key> -- <value>
$ put -- <key> <value>

If <value> isn't given as a command line argument and '--ignore-value' is not specified,
this command tries to read the value from standard input.

If <lease> isn't given as a command line argument and '--ignore-lease' is not specified,
this command tries to read the value from standard input.

For example,
$ cat file | put <key>
will store the content of the file to <key>.
`
