package cluster

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Cluster is a set of members bootstrapped together.
type Cluster struct {
	Members []*Member
}

// New prepares n members m1..mN under dir (each in dir/<name>/data, logging to
// dir/<name>/etcd.log) on free loopback ports, bootstrapping one cluster with token. Nothing is
// started yet.
func New(dir string, n int, token string) (*Cluster, error) {
	c := &Cluster{}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("m%d", i)
		m := &Member{Name: name, DataDir: filepath.Join(dir, name, "data"), LogPath: filepath.Join(dir, name, "etcd.log"),
			Token: token, State: "new"}
		var err error
		if m.ClientURL, err = FreeURL(); err != nil {
			return nil, err
		}
		if m.PeerURL, err = FreeURL(); err != nil {
			return nil, err
		}
		c.Members = append(c.Members, m)
	}
	c.Bootstrap()
	return c, nil
}

// Bootstrap sets every member's --initial-cluster to the whole set.
func (c *Cluster) Bootstrap() {
	var parts []string
	for _, m := range c.Members {
		parts = append(parts, m.Name+"="+m.PeerURL)
	}
	for _, m := range c.Members {
		m.InitialCluster = strings.Join(parts, ",")
	}
}

// Member returns the member called name, or nil.
func (c *Cluster) Member(name string) *Member {
	for _, m := range c.Members {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// Endpoints are the client URLs of every member.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, m.ClientURL)
	}
	return eps
}

// Client connects to every member.
func (c *Cluster) Client() (*clientv3.Client, error) {
	var tlsCfg = c.Members[0].TLS
	return NewClient(c.Endpoints(), tlsCfg)
}

// StopAll stops every member (for the end of a run).
func (c *Cluster) StopAll() error {
	var errs []error
	for _, m := range c.Members {
		if err := m.Stop(20 * time.Second); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Name, err))
		}
	}
	return errors.Join(errs...)
}
