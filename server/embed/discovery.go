package embed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/server/discovery"
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
	if err := discovery.ValidToken(d.Token); err != nil {
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
	token := d.Token
	return func(ctx context.Context, id uint64) (map[string][]string, error) {
		return discovery.Bootstrap(ctx, spec, token, name, self, id, lg)
	}
}
