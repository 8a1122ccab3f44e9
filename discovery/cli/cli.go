package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"etcdx/discovery/service"
	"etcdx/server/discovery"
	"etcdx/server/version"
)

// Exit statuses: 1 for failures, 2 for bad usage (as etcd and etcdctl).
const (
	exitError = 1
	exitUsage = 2
)

const usage = `discovery: the v3 discovery service for bootstrapping new etcd clusters.

Usage:
  discovery serve  [flags]   run the service (token API plus the etcd cluster members register in)
  discovery new    --endpoints URLS --size N [--token T]   create a token
  discovery status --endpoints URLS --token T [-w simple|json]   show who registered
  discovery delete --endpoints URLS --token T   remove a token and its registrations
  discovery version

New members then start with:
  etcd --discovery-endpoints URLS --discovery-token T --name NAME --initial-advertise-peer-urls URL ...

Run 'discovery COMMAND --help' for a command's flags.
`

// Main runs the command and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(args[1:], stdout, stderr)
	case "new":
		err = newToken(args[1:], stdout, stderr)
	case "status":
		err = status(args[1:], stdout, stderr)
	case "delete":
		err = deleteToken(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprint(stdout, strings.Replace(version.Banner(), "etcd Version", "discovery Version", 1))
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "discovery: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, pflag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "discovery %s: %v\n", args[0], err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "discovery %s: %v\n", args[0], err)
		return exitError
	}
}

// usageError marks mistakes in the command line (exit 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// clientFlags are the flags of the token commands for reaching the discovery cluster.
type clientFlags struct {
	endpoints      []string
	token          string
	timeout        time.Duration
	user, password string
}

func (c *clientFlags) register(fs *pflag.FlagSet, withToken bool) {
	fs.StringSliceVar(&c.endpoints, "endpoints", []string{"http://127.0.0.1:2379"}, "Client URLs of the etcd cluster that serves discovery.")
	fs.DurationVar(&c.timeout, "command-timeout", 5*time.Second, "Timeout of each request to the discovery cluster.")
	fs.StringVar(&c.user, "user", "", "username[:password] on a discovery cluster with authentication.")
	fs.StringVar(&c.password, "password", "", "Password of --user (when --user does not include it).")
	if withToken {
		fs.StringVar(&c.token, "token", "", "Discovery token.")
	}
}

// do connects to the discovery cluster and runs fn with a context bounded by --command-timeout.
func (c *clientFlags) do(fn func(ctx context.Context, cli *clientv3.Client) error) error {
	cfg := clientv3.Config{Endpoints: c.endpoints, DialTimeout: c.timeout, Logger: zap.NewNop()}
	if c.user != "" {
		name, pass, ok := strings.Cut(c.user, ":")
		if !ok {
			pass = c.password
		}
		cfg.Username, cfg.Password = name, pass
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", strings.Join(c.endpoints, ","), err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	return fn(ctx, cli)
}

// parse parses args, refusing positional arguments and a missing --token when required.
func parse(fs *pflag.FlagSet, args []string, c *clientFlags, needToken bool) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if c != nil && len(c.endpoints) == 0 {
		return usageError{errors.New("--endpoints must not be empty")}
	}
	if needToken {
		if err := discovery.ValidToken(c.token); err != nil {
			return usageError{fmt.Errorf("--token: %w", err)}
		}
	}
	return nil
}

func newFlagSet(name string, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("discovery "+name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	return fs
}

func newToken(args []string, stdout, stderr io.Writer) error {
	var c clientFlags
	var size int
	fs := newFlagSet("new", stderr)
	c.register(fs, true)
	fs.IntVar(&size, "size", 3, "Number of members of the new cluster.")
	if err := parse(fs, args, &c, false); err != nil {
		return err
	}
	if size < 1 {
		return usageError{fmt.Errorf("--size must be at least 1, got %d", size)}
	}
	if c.token == "" {
		t, err := service.NewToken()
		if err != nil {
			return err
		}
		c.token = t
	} else if err := discovery.ValidToken(c.token); err != nil {
		return usageError{fmt.Errorf("--token: %w", err)}
	}
	return c.do(func(ctx context.Context, cli *clientv3.Client) error {
		if err := discovery.Create(ctx, cli, c.token, size); err != nil {
			return err
		}
		fmt.Fprintln(stdout, c.token)
		return nil
	})
}

func status(args []string, stdout, stderr io.Writer) error {
	var c clientFlags
	var format string
	fs := newFlagSet("status", stderr)
	c.register(fs, true)
	fs.StringVarP(&format, "write-out", "w", "simple", "Output format: simple or json.")
	if err := parse(fs, args, &c, true); err != nil {
		return err
	}
	if format != "simple" && format != "json" {
		return usageError{fmt.Errorf("--write-out: unknown format %q (want simple or json)", format)}
	}
	var st discovery.State
	if err := c.do(func(ctx context.Context, cli *clientv3.Client) (err error) {
		st, err = discovery.Read(ctx, cli, c.token)
		return err
	}); err != nil {
		return err
	}
	info := service.Info(st, nil)
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	fmt.Fprintf(stdout, "token %s: %d of %d members registered", info.Token, len(info.Registered), info.Size)
	if info.Complete {
		fmt.Fprint(stdout, " (complete)")
	}
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tPEER URLS\tREVISION\t")
	for _, m := range info.Registered {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t\n", m.ID, m.Name, strings.Join(m.PeerURLs, ","), m.CreateRevision)
	}
	for _, m := range info.Extra {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t(refused: cluster full)\n", m.ID, m.Name, strings.Join(m.PeerURLs, ","), m.CreateRevision)
	}
	return tw.Flush()
}

func deleteToken(args []string, stdout, stderr io.Writer) error {
	var c clientFlags
	fs := newFlagSet("delete", stderr)
	c.register(fs, true)
	if err := parse(fs, args, &c, true); err != nil {
		return err
	}
	var n int64
	if err := c.do(func(ctx context.Context, cli *clientv3.Client) (err error) {
		n, err = discovery.Delete(ctx, cli, c.token)
		return err
	}); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("no such discovery token: %s", c.token)
	}
	fmt.Fprintf(stdout, "deleted token %s (%d keys)\n", c.token, n)
	return nil
}

// waitForSignal blocks until SIGTERM or SIGINT, or until fail delivers an error.
func waitForSignal(stderr io.Writer, fail <-chan error) error {
	sigc := make(chan os.Signal, 2)
	signal.Notify(sigc, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigc)
	select {
	case sig := <-sigc:
		fmt.Fprintf(stderr, "discovery: received %s, shutting down\n", sig)
		return nil
	case err := <-fail:
		return err
	}
}
