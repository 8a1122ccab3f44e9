package commands

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"

	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/etcdctl/cli"
	"etcdx/etcdctl/printer"
)

// Upstream's watch argument errors, word for word: scripts match on them.
var (
	errWatchArgs        = errors.New("bad number of arguments")
	errWatchConflictEnv = errors.New("bad number of arguments (found conflicting environment key)")
	errWatchSeparator   = errors.New("bad number of arguments (found separator --, but no commands)")
)

// watchOptions are the flags of one watch (the command's, or one interactive line's).
type watchOptions struct {
	rev                                   int64
	prefix, prevKV, progress, interactive bool
}

func (o *watchOptions) register(fs *pflag.FlagSet) {
	fs.BoolVar(&o.prefix, "prefix", false, "Watch on a prefix if prefix is set")
	fs.Int64Var(&o.rev, "rev", 0, "Revision to start watching")
	fs.BoolVar(&o.prevKV, "prev-kv", false, "get the previous key-value pair before the event happens")
	fs.BoolVar(&o.progress, "progress-notify", o.progress, "get periodic watch progress notification from server")
}

// watchTarget is what one watch covers and the command it runs per event.
type watchTarget struct {
	key, end string
	exec     []string
}

// parseWatchArgs splits positional arguments (dash: how many came before "--", or -1) into the
// watched key or range and the command to execute. ETCDCTL_WATCH_KEY and ETCDCTL_WATCH_RANGE_END
// stand in for the key and range end, and then no key may be given on the line.
func parseWatchArgs(args []string, dash int, envKey, envEnd string) (watchTarget, error) {
	var t watchTarget
	keys := args
	if dash >= 0 {
		keys, t.exec = args[:dash], args[dash:]
		if len(t.exec) == 0 {
			return t, errWatchSeparator
		}
	}
	if envKey != "" {
		if len(keys) > 0 {
			return t, errWatchConflictEnv
		}
		keys = []string{envKey}
		if envEnd != "" {
			keys = append(keys, envEnd)
		}
	}
	switch len(keys) {
	case 1:
		t.key = keys[0]
	case 2:
		t.key, t.end = keys[0], keys[1]
	default:
		return t, errWatchArgs
	}
	return t, nil
}

func (o *watchOptions) opts(t watchTarget) ([]clientv3.OpOption, error) {
	opts := []clientv3.OpOption{clientv3.WithRev(o.rev)}
	if t.end != "" {
		if o.prefix {
			return nil, fmt.Errorf("`range_end` and `--prefix` are mutually exclusive")
		}
		opts = append(opts, clientv3.WithRange(t.end))
	}
	if o.prefix {
		opts = append(opts, clientv3.WithPrefix())
	}
	if o.prevKV {
		opts = append(opts, clientv3.WithPrevKV())
	}
	if o.progress {
		opts = append(opts, clientv3.WithProgressNotify())
	}
	return opts, nil
}

func watchCommand(g *global) *cli.Command {
	o := &watchOptions{}
	return &cli.Command{Name: "watch", Args: "[options] [key or prefix] [range_end] [--] [exec-command arg1 arg2 ...]",
		Short: "Watches events stream on keys or prefixes",
		Flags: func(fs *pflag.FlagSet) {
			fs.BoolVarP(&o.interactive, "interactive", "i", false, "Interactive mode")
			o.register(fs)
		},
		Run: run(g, func(e *env) error {
			envKey, envEnd := lookupEnv(e.Environ, "ETCDCTL_WATCH_KEY"), lookupEnv(e.Environ, "ETCDCTL_WATCH_RANGE_END")
			if envKey == "" && envEnd != "" {
				return cli.BadArgs("ETCDCTL_WATCH_KEY is empty but got ETCDCTL_WATCH_RANGE_END=%q", envEnd)
			}
			c, err := e.cl()
			if err != nil {
				return err
			}
			w := &watchPrinter{e: e, c: c}
			if o.interactive {
				return w.interactive(o, envKey, envEnd)
			}
			t, err := parseWatchArgs(e.Args, e.Dash, envKey, envEnd)
			if err != nil {
				return &cli.Error{Code: cli.ExitBadArgs, Err: err}
			}
			opts, err := o.opts(t)
			if err != nil {
				return &cli.Error{Code: cli.ExitBadArgs, Err: err}
			}
			if err := w.follow(c.Watch(clientv3.WithRequireLeader(context.Background()), t.key, opts...), t.exec); err != nil {
				return err
			}
			return &cli.Error{Code: cli.ExitInterrupted, Err: errors.New("watch is canceled by the server")}
		}),
	}
}

func lookupEnv(environ []string, name string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// watchPrinter prints the responses of one or more watches (interactive mode runs several at
// once), one response at a time.
type watchPrinter struct {
	e  *env
	c  *clientv3.Client
	mu sync.Mutex
}

// follow prints ch until it closes, running exec (if any) once per event. A response the format
// cannot print ends it with that error.
func (w *watchPrinter) follow(ch clientv3.WatchChan, execArgs []string) error {
	for resp := range ch {
		if err := w.print(resp); err != nil {
			return err
		}
		for _, ev := range resp.Events {
			if len(execArgs) == 0 {
				break
			}
			cmd := exec.CommandContext(w.c.Ctx(), execArgs[0], execArgs[1:]...)
			// The variables upstream sets, with its quoting, so existing hooks keep working.
			cmd.Env = append(append([]string(nil), w.e.Environ...),
				fmt.Sprintf("ETCD_WATCH_REVISION=%d", resp.Header.Revision),
				fmt.Sprintf("ETCD_WATCH_EVENT_TYPE=%q", ev.Type),
				fmt.Sprintf("ETCD_WATCH_KEY=%q", ev.Kv.Key),
				fmt.Sprintf("ETCD_WATCH_VALUE=%q", ev.Kv.Value))
			cmd.Stdout, cmd.Stderr = w.e.Stdout, w.e.Stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("command %q error (%w)", execArgs, err)
			}
		}
	}
	return nil
}

func (w *watchPrinter) print(resp clientv3.WatchResponse) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if resp.Canceled {
		fmt.Fprintf(w.e.Stderr, "watch was canceled (%v)\n", resp.Err())
	}
	if resp.IsProgressNotify() {
		fmt.Fprintf(w.e.Stdout, "progress notify: %d\n", resp.Header.Revision)
	}
	return w.e.out.Print(printer.Watch{R: resp})
}

// interactive reads "watch [options] key [range_end] [-- command]" and "progress" lines from stdin,
// starting a watch per line, until stdin ends.
func (w *watchPrinter) interactive(cmdline *watchOptions, envKey, envEnd string) error {
	lines, readErr := streamLines(w.e.Stdin)
	// A watch whose command fails ends etcdctl at once, as upstream, even while input is quiet.
	failed := make(chan error, 1)
	for {
		var line string
		select {
		case err := <-failed:
			return err
		case l, ok := <-lines:
			if !ok {
				return &cli.Error{Code: cli.ExitInvalidData, Err: fmt.Errorf("error reading watch request line: %w", <-readErr)}
			}
			line = l
		}
		words, aerr := argify(line)
		if aerr != nil || len(words) == 0 {
			fmt.Fprintf(w.e.Stderr, "Invalid command: %s (watch and progress supported)\n", line)
			continue
		}
		switch words[0] {
		case "watch":
			if len(words) < 2 && envKey == "" {
				fmt.Fprintf(w.e.Stderr, "Invalid command %s (command type or key is not provided)\n", line)
				continue
			}
			ch, execArgs, err := w.watchLine(words[1:], cmdline, envKey, envEnd)
			if err != nil {
				fmt.Fprintf(w.e.Stderr, "Invalid command %s (%v)\n", line, err)
				continue
			}
			go func() {
				if err := w.follow(ch, execArgs); err != nil {
					select {
					case failed <- err:
					default:
					}
				}
			}()
		case "progress":
			if err := w.c.RequestProgress(clientv3.WithRequireLeader(context.Background())); err != nil {
				return err
			}
		default:
			fmt.Fprintf(w.e.Stderr, "Invalid command %s (only support watch)\n", line)
		}
	}
}

// streamLines delivers r's lines (without newline, a last unterminated one included) until it
// ends; then lines closes and readErr holds why (io.EOF at the end of input).
func streamLines(r io.Reader) (lines <-chan string, readErr <-chan error) {
	lc, ec := make(chan string), make(chan error, 1)
	go func() {
		in := bufio.NewReader(r)
		for {
			line, err := in.ReadString('\n')
			if line != "" && (err == nil || err == io.EOF) {
				lc <- strings.TrimSuffix(line, "\n")
			}
			if err != nil {
				ec <- err
				close(lc)
				return
			}
		}
	}()
	return lc, ec
}

// watchLine starts the watch one interactive line asks for; the line's flags start from
// --progress-notify as given on the command line.
func (w *watchPrinter) watchLine(words []string, cmdline *watchOptions, envKey, envEnd string) (clientv3.WatchChan, []string, error) {
	o := &watchOptions{progress: cmdline.progress}
	fs := pflag.NewFlagSet("watch", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.register(fs)
	if err := fs.Parse(words); err != nil {
		return nil, nil, err
	}
	t, err := parseWatchArgs(fs.Args(), fs.ArgsLenAtDash(), envKey, envEnd)
	if err != nil {
		return nil, nil, err
	}
	opts, err := o.opts(t)
	if err != nil {
		return nil, nil, err
	}
	return w.c.Watch(clientv3.WithRequireLeader(context.Background()), t.key, opts...), t.exec, nil
}
