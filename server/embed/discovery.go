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

// EnabledAny says whether any v3 discovery setting was given (upstream's test against the v2 ones).
func (d *DiscoveryConfig) EnabledAny() bool {
	return d.enabled() || d.Token != "" || d.Secure.Cert != "" || d.Secure.Key != "" || d.Secure.Cacert != "" ||
		d.Auth.Username != "" || d.Auth.Password != ""
}

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

// v2Joiner returns the server's Discover hook for v2 discovery (--discovery): register
// name=self in the URL's directory, wait for the other members, and return the initial cluster.
func v2Joiner(durl, proxy, name string, self []string, lg *slog.Logger) func(context.Context, uint64) (map[string][]string, error) {
	parts := make([]string, len(self))
	for i, u := range self {
		parts[i] = name + "=" + u
	}
	return func(ctx context.Context, id uint64) (map[string][]string, error) {
		j, err := discovery.NewV2Joiner(durl, proxy, id, lg)
		if err != nil {
			return nil, err
		}
		ic, err := j.Join(ctx, strings.Join(parts, ","))
		if err != nil {
			return nil, err
		}
		if _, ok := ic[name]; !ok {
			return nil, fmt.Errorf("member %q has previously registered with discovery service token (%s). But etcd could not find valid cluster configuration in the given data dir", name, durl)
		}
		return ic, nil
	}
}
