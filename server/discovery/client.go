package discovery

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"etcdx/server/membership"
)

// Bootstrap is how a new member started with --discovery-endpoints learns its initial cluster:
// it connects to the discovery cluster described by spec, registers name=selfPeerURLs as member
// selfID under token, waits for the rest and returns every member's name and peer URLs.
func Bootstrap(ctx context.Context, spec clientv3.ConfigSpec, token, name string, selfPeerURLs []string, selfID uint64, lg *slog.Logger) (map[string][]string, error) {
	if spec.Auth != nil && spec.Auth.Password == "" {
		// --discovery-user accepts "name:password", as upstream.
		auth := *spec.Auth
		auth.Username, auth.Password, _ = strings.Cut(auth.Username, ":")
		spec.Auth = &auth
	}
	ccfg, err := clientv3.NewClientConfig(&spec, zap.NewNop())
	if err != nil {
		return nil, fmt.Errorf("discovery client settings: %w", err)
	}
	ccfg.Logger = zap.NewNop()
	ccfg.Context = ctx
	// Dial lazily: an unreachable discovery service is retried like any failed request (a
	// blocking dial would give up after the dial timeout).
	ccfg.DialTimeout = 0
	cli, err := clientv3.New(*ccfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	defer cli.Close()
	parts := make([]string, len(selfPeerURLs))
	for i, u := range selfPeerURLs {
		parts[i] = name + "=" + u
	}
	j := Joiner{Client: cli, Token: token, SelfID: selfID, Self: strings.Join(parts, ","),
		RequestTimeout: spec.RequestTimeout, Logger: lg.With("discovery-token", token, "discovery-endpoints", strings.Join(spec.Endpoints, ","))}
	s, err := j.Join(ctx)
	if err != nil {
		return nil, err
	}
	lg.Info("discovery joined cluster successfully", "cluster", s)
	return membership.ParseInitialCluster(s)
}
