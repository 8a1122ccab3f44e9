package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"etcdx/etcdctl/cli"
	"etcdx/etcdctl/printer"
)

// untilSignal is cancelled by SIGINT or SIGTERM: lock and elect then give up what they hold and
// exit 0, as upstream.
func untilSignal() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// printKey prints key as get does (the lock or election key that is now ours).
func (e *env) printKey(ctx context.Context, c *clientv3.Client, key string) (bool, error) {
	resp, err := c.Get(ctx, key)
	if err != nil {
		return false, err
	}
	return len(resp.Kvs) > 0, e.out.Print(printer.Get{R: (*pb.RangeResponse)(resp)})
}

func lockCommand(g *global) *cli.Command {
	ttl := 10
	return &cli.Command{Name: "lock", Args: "<lockname> [exec-command arg1 arg2 ...]", Short: "Acquires a named lock",
		Flags: func(fs *pflag.FlagSet) { fs.IntVar(&ttl, "ttl", ttl, "timeout for session") },
		Run: run(g, func(e *env) error {
			if len(e.Args) == 0 {
				return cli.BadArgs("lock takes a lock name argument and an optional command to execute")
			}
			c, err := e.cl()
			if err != nil {
				return err
			}
			s, err := concurrency.NewSession(c, concurrency.WithTTL(ttl))
			if err != nil {
				return err
			}
			defer s.Close()
			ctx, stop := untilSignal()
			defer stop()
			m := concurrency.NewMutex(s, e.Args[0])
			if err := m.Lock(ctx); err != nil {
				return err
			}
			if cmdArgs := e.Args[1:]; len(cmdArgs) > 0 {
				return e.runLocked(m, cmdArgs)
			}
			held, err := e.printKey(ctx, c, m.Key())
			if err != nil {
				return err
			}
			if !held {
				return errors.New("lock lost on init")
			}
			select {
			case <-ctx.Done():
				return m.Unlock(context.Background())
			case <-s.Done():
				return errors.New("session expired")
			}
		}),
	}
}

// runLocked runs the command while holding m; etcdctl exits with the command's status.
func (e *env) runLocked(m *concurrency.Mutex, cmdArgs []string) error {
	cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	cmd.Env = append([]string{"ETCD_LOCK_KEY=" + m.Key(), fmt.Sprintf("ETCD_LOCK_REV=%d", m.Header().Revision)}, e.Environ...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.Stdin, e.Stdout, e.Stderr
	runErr := cmd.Run()
	unlockErr := m.Unlock(context.Background())
	var exitErr *exec.ExitError
	if errors.As(runErr, &exitErr) {
		return &cli.Error{Code: exitErr.ExitCode(), Err: runErr}
	}
	if runErr != nil {
		return runErr
	}
	return unlockErr
}

func electCommand(g *global) *cli.Command {
	listen := false
	return &cli.Command{Name: "elect", Args: "<election-name> [proposal]", Short: "Observes and participates in leader election",
		Flags: func(fs *pflag.FlagSet) { fs.BoolVarP(&listen, "listen", "l", false, "observation mode") },
		Run: run(g, func(e *env) error {
			switch {
			case len(e.Args) != 1 && len(e.Args) != 2:
				return cli.BadArgs("elect takes one election name argument and an optional proposal argument")
			case len(e.Args) == 1 && !listen:
				return cli.BadArgs("no proposal argument but -l not set")
			case len(e.Args) == 2 && listen:
				return cli.BadArgs("proposal given but -l is set")
			}
			c, err := e.cl()
			if err != nil {
				return err
			}
			s, err := concurrency.NewSession(c)
			if err != nil {
				return err
			}
			defer s.Close()
			ctx, stop := untilSignal()
			defer stop()
			el := concurrency.NewElection(s, e.Args[0])
			if listen {
				return e.observe(ctx, el)
			}
			return e.campaign(ctx, c, s, el, e.Args[1])
		}),
	}
}

// observe prints each new leader's proposal until a signal.
func (e *env) observe(ctx context.Context, el *concurrency.Election) error {
	for resp := range el.Observe(ctx) {
		if err := e.out.Print(printer.Get{R: (*pb.RangeResponse)(&resp)}); err != nil {
			return err
		}
	}
	if ctx.Err() == nil {
		return errors.New("elect: observer lost")
	}
	return nil
}

// campaign waits to be elected, prints the leader key, and resigns on a signal.
func (e *env) campaign(ctx context.Context, c *clientv3.Client, s *concurrency.Session, el *concurrency.Election, proposal string) error {
	if err := el.Campaign(ctx, proposal); err != nil {
		return err
	}
	if _, err := e.printKey(ctx, c, el.Key()); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-s.Done():
		return errors.New("elect: session expired")
	}
	return el.Resign(context.Background())
}
