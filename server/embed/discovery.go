package embed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"etcdx/discovery/registry"
)

// DiscoveryConfig is upstream's v3 discovery configuration (config file key "discovery-config"):
// the client settings for the etcd cluster that serves discovery, and the token.
type DiscoveryConfig struct {
	clientv3.ConfigSpec `json:"client"`
	Token               string `json:"token"`
}

func (d *DiscoveryConfig) enabled() bool { return len(d.Endpoints) > 0 }

// ErrConflictBootstrapFlags is upstream's refusal of two ways to bootstrap at once.
var ErrConflictBootstrapFlags = errors.New("multiple discovery or bootstrap flags are set. " +
	"Choose one of \"initial-cluster\", \"discovery\", \"discovery-endpoints\" or \"discovery-srv\"")

// validate checks the discovery settings against the rest, with upstream's messages.
func (d *DiscoveryConfig) validate(initialCluster string) error {
	if d.enabled() && initialCluster != "" {
		return ErrConflictBootstrapFlags
	}
	if (d.Token != "") != d.enabled() {
		return errors.New("both --discovery-token and --discovery-endpoints must be set")
	}
	for _, ep := range d.Endpoints {
		if strings.TrimSpace(ep) == "" {
			return errors.New("--discovery-endpoints must not contain empty endpoints")
		}
	}
	if !d.enabled() {
		return nil
	}
	if err := registry.ValidToken(d.Token); err != nil {
		return fmt.Errorf("--discovery-token: %w", err)
	}
	if d.RequestTimeout <= 0 {
		return errors.New("--discovery-request-timeout must be greater than 0")
	}
	return nil
}

// joiner returns the server's Discover hook: register name=self under the token, wait for the
// other members, and return the whole initial cluster.
func (d *DiscoveryConfig) joiner(name string, self []string, lg *slog.Logger) func(context.Context, uint64) (map[string][]string, error) {
	spec := *d.ConfigSpec.Clone()
	if spec.Auth != nil && spec.Auth.Password == "" {
		// --discovery-user accepts "name:password", as upstream.
		spec.Auth.Username, spec.Auth.Password, _ = strings.Cut(spec.Auth.Username, ":")
	}
	token := d.Token
	return func(ctx context.Context, id uint64) (map[string][]string, error) {
		ccfg, err := clientv3.NewClientConfig(&spec, zap.NewNop())
		if err != nil {
			return nil, fmt.Errorf("discovery client settings: %w", err)
		}
		ccfg.Logger = zap.NewNop()
		ccfg.Context = ctx
		// Dial lazily: an unreachable discovery service is retried like any failed request
		// (a blocking dial would give up after the dial timeout).
		ccfg.DialTimeout = 0
		cli, err := clientv3.New(*ccfg)
		if err != nil {
			return nil, fmt.Errorf("discovery client: %w", err)
		}
		defer cli.Close()
		parts := make([]string, len(self))
		for i, u := range self {
			parts[i] = name + "=" + u
		}
		j := registry.Joiner{Client: cli, Token: token, SelfID: id, Self: strings.Join(parts, ","),
			RequestTimeout: spec.RequestTimeout, Logger: lg.With("discovery-token", token, "discovery-endpoints", strings.Join(spec.Endpoints, ","))}
		s, err := j.Join(ctx)
		if err != nil {
			return nil, err
		}
		lg.Info("discovery joined cluster successfully", "cluster", s)
		return ParseInitialCluster(s)
	}
}
