package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Joiner registers one new member under a token and waits for the rest.
type Joiner struct {
	Client *clientv3.Client
	Token  string
	// SelfID is the member's ID (computed from its peer URLs and the token, as for any new
	// cluster); Self is its part of --initial-cluster, "name=peerURL[,name=peerURL2]".
	SelfID uint64
	Self   string
	// RequestTimeout bounds each request to the discovery cluster.
	RequestTimeout time.Duration
	// MaxBackoff caps the wait between retries after the discovery cluster failed a request.
	MaxBackoff time.Duration
	Logger     *slog.Logger
}

// Join registers the member and returns the new cluster's --initial-cluster once Size members
// have registered. It refuses when the token's size is missing or bad, and when Size members
// registered before this one (ErrFullCluster). Unavailability of the discovery cluster is retried
// until ctx ends.
func (j *Joiner) Join(ctx context.Context) (string, error) {
	if err := ValidToken(j.Token); err != nil {
		return "", err
	}
	if err := checkValue(j.Self); err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	lg := j.logger()
	self := MemberKey(j.Token, j.SelfID)
	st, err := j.read(ctx)
	if err != nil {
		return "", err
	}
	// A member that registered in an earlier, interrupted start keeps its place.
	if pos := st.Position(self); pos < 0 && len(st.Members) >= st.Size {
		return "", ErrFullCluster
	}
	if err := j.retry(ctx, "register member itself", func(ctx context.Context) error {
		_, err := j.Client.Put(ctx, self, j.Self)
		return err
	}); err != nil {
		return "", err
	}
	lg.Info("registered member itself with the discovery service", "member-key", self, "member-info", j.Self)
	for {
		st, err = j.read(ctx)
		if err != nil {
			return "", err
		}
		pos := st.Position(self)
		if pos < 0 {
			return "", fmt.Errorf("registration %s disappeared from the discovery service (was the token deleted?)", self)
		}
		if pos >= st.Size {
			return "", ErrFullCluster
		}
		if st.Complete() {
			lg.Info("found all needed peers from discovery service", "cluster-size", st.Size, "found-peers", len(st.Members))
			return st.InitialCluster()
		}
		lg.Info("waiting for peers from discovery service", "cluster-size", st.Size, "found-peers", len(st.Members))
		if err := j.waitChange(ctx, st.Revision); err != nil {
			return "", err
		}
	}
}

// read is Read with retries of everything but the token's own errors.
func (j *Joiner) read(ctx context.Context) (State, error) {
	var st State
	err := j.retry(ctx, "read cluster size and members", func(ctx context.Context) error {
		var err error
		st, err = Read(ctx, j.Client, j.Token)
		if errors.Is(err, ErrSizeNotFound) || errors.Is(err, ErrBadSizeKey) {
			return permanent{err}
		}
		return err
	})
	return st, err
}

// waitChange returns after the token's members changed since rev, or the watch broke (the
// caller reads again either way).
func (j *Joiner) waitChange(ctx context.Context, rev int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := j.Client.Watch(wctx, TokenPrefix(j.Token), clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	select {
	case wr, ok := <-wch:
		if ok && wr.Err() != nil {
			j.logger().Warn("watching the discovery token failed; reading it again", "error", wr.Err())
			return sleep(ctx, time.Second)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for peers from discovery service: %w", ctx.Err())
	}
}

// permanent marks an error that retrying cannot fix.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// retry runs op with a per-request timeout until it succeeds, fails permanently or ctx ends,
// backing off exponentially (1s, 2s, 4s ... MaxBackoff) as upstream does.
func (j *Joiner) retry(ctx context.Context, step string, op func(context.Context) error) error {
	backoff := time.Second
	for {
		rctx, cancel := context.WithTimeout(ctx, j.requestTimeout())
		err := op(rctx)
		cancel()
		if err == nil {
			return nil
		}
		var p permanent
		if errors.As(err, &p) {
			return p.err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w (last error: %v)", step, ctx.Err(), err)
		}
		j.logger().Warn("retry connecting to discovery service", "reason", step, "backoff", backoff.String(), "error", err)
		if err := sleep(ctx, backoff); err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		if backoff *= 2; backoff > j.maxBackoff() {
			backoff = j.maxBackoff()
		}
	}
}

// sleep waits d unless ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (j *Joiner) logger() *slog.Logger {
	if j.Logger == nil {
		return slog.Default()
	}
	return j.Logger
}

func (j *Joiner) requestTimeout() time.Duration {
	if j.RequestTimeout <= 0 {
		return 5 * time.Second
	}
	return j.RequestTimeout
}

func (j *Joiner) maxBackoff() time.Duration {
	if j.MaxBackoff <= 0 {
		return 32 * time.Second
	}
	return j.MaxBackoff
}
