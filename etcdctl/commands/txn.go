package commands

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/etcdctl/cli"
	"etcdx/etcdctl/printer"
)

// txnInputError is upstream's exit status for unreadable transaction input.
func txnInputError(err error) error { return &cli.Error{Code: cli.ExitInvalidData, Err: err} }

func txnCommand(g *global) *cli.Command {
	var interactive bool
	return &cli.Command{Name: "txn", Args: "[options]", Short: "Txn processes all the requests in one transaction", Long: sinceLevel(g, "3.6", txnHelp),
		Flags: func(fs *pflag.FlagSet) {
			fs.BoolVarP(&interactive, "interactive", "i", false, "Input transaction in interactive mode")
		},
		Run: run(g, func(e *env) error {
			if len(e.Args) != 0 {
				return cli.BadArgs("txn command does not accept argument")
			}
			prompt := func(s string) {
				if interactive {
					fmt.Fprintln(e.Stdout, s)
				}
			}
			r := bufio.NewReader(e.Stdin)
			prompt("compares:")
			cmps, err := readCompares(r)
			if err != nil {
				return err
			}
			prompt("success requests (get, put, del):")
			then, err := readOps(r, e)
			if err != nil {
				return err
			}
			prompt("failure requests (get, put, del):")
			els, err := readOps(r, e)
			if err != nil {
				return err
			}
			c, err := e.cl()
			if err != nil {
				return err
			}
			resp, err := c.Txn(context.Background()).If(cmps...).Then(then...).Else(els...).Commit()
			if err != nil {
				return err
			}
			return e.out.Print(printer.Txn{R: (*pb.TxnResponse)(resp)})
		}),
	}
}

// readLines reads lines up to an empty one; each goes through parse.
func readLines[T any](r *bufio.Reader, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, txnInputError(err)
		}
		line = strings.TrimSpace(line)
		if line == "" {
			return out, nil
		}
		v, err := parse(line)
		if err != nil {
			return nil, txnInputError(err)
		}
		out = append(out, v)
	}
}

func readCompares(r *bufio.Reader) ([]clientv3.Cmp, error) {
	return readLines(r, parseCompare)
}

func readOps(r *bufio.Reader, e *env) ([]clientv3.Op, error) {
	return readLines(r, func(line string) (clientv3.Op, error) { return parseRequest(line, e) })
}

// parseCompare reads `target("key") op "value"`, e.g. mod("k") > "0" or value("k") = "v".
func parseCompare(line string) (clientv3.Cmp, error) {
	target, rest, ok := strings.Cut(line, "(")
	if !ok {
		return clientv3.Cmp{}, fmt.Errorf("malformed comparison: %s", line)
	}
	var key, op, val string
	n, serr := fmt.Sscanf(rest, "%q) %s %q", &key, &op, &val)
	if n != 3 {
		return clientv3.Cmp{}, fmt.Errorf("malformed comparison: %s; got %s(%q) %s %q", line, target, key, op, val)
	}
	if serr != nil {
		return clientv3.Cmp{}, fmt.Errorf("malformed comparison: %s (%w)", line, serr)
	}
	num := func(base int) (int64, error) { return strconv.ParseInt(val, base, 64) }
	var v int64
	var err error
	var cmp clientv3.Cmp
	switch target {
	case "ver", "version":
		if v, err = num(10); err == nil {
			cmp = clientv3.Compare(clientv3.Version(key), op, v)
		}
	case "c", "create":
		if v, err = num(10); err == nil {
			cmp = clientv3.Compare(clientv3.CreateRevision(key), op, v)
		}
	case "m", "mod":
		if v, err = num(10); err == nil {
			cmp = clientv3.Compare(clientv3.ModRevision(key), op, v)
		}
	case "val", "value":
		cmp = clientv3.Compare(clientv3.Value(key), op, val)
	case "lease":
		if v, err = num(16); err == nil {
			cmp = clientv3.Compare(clientv3.LeaseValue(key), op, v)
		}
	default:
		return clientv3.Cmp{}, fmt.Errorf("malformed comparison: %s (unknown target %s)", line, target)
	}
	if err != nil {
		return clientv3.Cmp{}, fmt.Errorf("invalid txn compare request: %s", line)
	}
	return cmp, nil
}

// argsRegexp splits a request line into words: "double quoted", 'single quoted' or bare.
var argsRegexp = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'[^']*'|[^'"\s]\S*[^'"\s]?`)

func argify(s string) ([]string, error) {
	args := argsRegexp.FindAllString(s, -1)
	for i, a := range args {
		switch {
		case a == "":
		case a[0] == '\'':
			args[i] = a[1 : len(a)-1]
		case a[0] == '"':
			if _, err := fmt.Sscanf(a, "%q", &args[i]); err != nil {
				return nil, err
			}
		}
	}
	return args, nil
}

// parseRequest reads a get, put or del line with the same flags as those commands.
func parseRequest(line string, e *env) (clientv3.Op, error) {
	args, err := argify(line)
	if err != nil {
		return clientv3.Op{}, err
	}
	if len(args) < 2 {
		return clientv3.Op{}, fmt.Errorf("invalid txn compare request: %s", line)
	}
	bad := fmt.Errorf("invalid txn request: %s", line)
	fs := pflag.NewFlagSet(args[0], pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	switch args[0] {
	case "get":
		o := &getOptions{revFilters: true}
		o.register(fs)
		if fs.Parse(args[1:]) != nil {
			return clientv3.Op{}, bad
		}
		key, opts, err := o.op(fs.Args())
		if err != nil {
			return clientv3.Op{}, bad
		}
		return clientv3.OpGet(key, opts...), nil
	case "put":
		o := &putOptions{}
		o.register(fs)
		if fs.Parse(args[1:]) != nil {
			return clientv3.Op{}, bad
		}
		key, value, opts, err := o.op(fs.Args(), strings.NewReader(""))
		if err != nil {
			return clientv3.Op{}, bad
		}
		return clientv3.OpPut(key, value, opts...), nil
	case "del":
		o := &delOptions{}
		o.register(fs)
		if fs.Parse(args[1:]) != nil {
			return clientv3.Op{}, bad
		}
		key, opts, err := o.op(fs.Args(), e.Stderr)
		if err != nil {
			return clientv3.Op{}, bad
		}
		return clientv3.OpDelete(key, opts...), nil
	}
	return clientv3.Op{}, bad
}

// txnHelp is upstream's long help of txn.
const txnHelp = `Txn reads multiple etcd requests from standard input and applies them as a single atomic transaction.

A transaction consists of three components:
1) a list of conditions,
2) a list of requests to apply if all the conditions are true,
3) a list of requests to apply if any condition is false.

Example interactive stdin usage:

---
etcdctl txn -i
# compares:
mod("key1") > "0"

# success requests (get, put, delete):
put key1 "overwrote-key1"

# failure requests (get, put, delete):
put key1 "created-key1"
put key2 "some extra key"
---

Refer to https://github.com/etcd-io/etcd/blob/main/etcdctl/README.md#txn-options.`
