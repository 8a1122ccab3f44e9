package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv2 "go.etcd.io/etcd/client/v2"

	"etcdx/server/membership"
)

// V2 discovery (--discovery=<url>, levels 3.5 and 3.6, as upstream until 3.7): a v2 keys
// directory on a discovery service (an etcd serving the v2 API) holds _config/size and one key
// per registering member, its ID, with its part of the initial cluster as the value. The first
// size members by creation index form the cluster.

// Upstream's v2 discovery errors.
var (
	ErrV2InvalidURL           = errors.New("discovery: invalid URL")
	ErrV2BadSizeKey           = errors.New("discovery: size key is bad")
	ErrV2SizeNotFound         = errors.New("discovery: size key not found")
	ErrV2DuplicateID          = errors.New("discovery: found duplicate id")
	ErrV2DuplicateName        = errors.New("discovery: found duplicate name")
	ErrV2FullCluster          = errors.New("discovery: cluster is full")
	ErrV2BadDiscoveryEndpoint = errors.New("discovery: bad discovery endpoint")
)

// v2RequestTimeout bounds each request to the discovery service (upstream's client default).
const v2RequestTimeout = 5 * time.Second

// V2Joiner registers one new member in a v2 discovery directory and waits for the rest.
type V2Joiner struct {
	keys clientv2.KeysAPI
	dir  string // the token's directory, as a key path
	base string // the service's URL, for the logs
	self string // the member's ID in hex
	log  *slog.Logger
	// retries counts the failed tries to reach the service, for the backoff.
	retries uint
}

// NewV2Joiner reads the discovery URL (its path is the token's directory) and an optional HTTP
// proxy for it.
func NewV2Joiner(durl, proxy string, selfID uint64, log *slog.Logger) (*V2Joiner, error) {
	u, err := url.Parse(durl)
	if err != nil {
		return nil, err
	}
	dir := u.Path
	u.Path = ""
	tr, err := transport.NewTransport(transport.TLSInfo{}, 30*time.Second)
	if err != nil {
		return nil, err
	}
	if proxy != "" {
		pu, err := url.Parse(proxy)
		if err != nil || !strings.HasPrefix(pu.Scheme, "http") {
			if pu, err = url.Parse("http://" + proxy); err != nil {
				return nil, fmt.Errorf("invalid proxy address %q: %w", proxy, err)
			}
		}
		log.Info("running proxy with discovery", "proxy-url", pu.String())
		tr.Proxy = http.ProxyURL(pu)
	}
	c, err := clientv2.New(clientv2.Config{Transport: tr, Endpoints: []string{u.String()}})
	if err != nil {
		return nil, err
	}
	return &V2Joiner{keys: clientv2.NewKeysAPIWithPrefix(c, ""), dir: dir, base: u.String(),
		self: strconv.FormatUint(selfID, 16), log: log}, nil
}

func (j *V2Joiner) selfKey() string { return path.Join("/", j.dir, j.self) }

// Join registers self ("name=peerURL[,...]") and returns the initial cluster once size members
// have registered.
func (j *V2Joiner) Join(ctx context.Context, self string) (map[string][]string, error) {
	if _, _, _, err := j.check(ctx); err != nil {
		return nil, err
	}
	if err := j.register(ctx, self); err != nil {
		return nil, err
	}
	nodes, size, index, err := j.check(ctx)
	if err != nil {
		return nil, err
	}
	all, err := j.wait(ctx, nodes, size, index)
	if err != nil {
		return nil, err
	}
	return v2Cluster(all, size)
}

// register creates the member's key and waits until the service has it.
func (j *V2Joiner) register(ctx context.Context, self string) error {
	rctx, cancel := context.WithTimeout(ctx, v2RequestTimeout)
	resp, err := j.keys.Create(rctx, j.selfKey(), self)
	cancel()
	var e clientv2.Error
	if errors.As(err, &e) && e.Code == clientv2.ErrorCodeNodeExist {
		return ErrV2DuplicateID
	}
	if err != nil {
		return err
	}
	_, err = j.keys.Watcher(j.selfKey(), &clientv2.WatcherOptions{AfterIndex: resp.Node.CreatedIndex - 1}).Next(ctx)
	return err
}

// check reads the size and the registered members in creation order; ErrV2FullCluster when size
// others registered before this member.
func (j *V2Joiner) check(ctx context.Context) ([]*clientv2.Node, uint64, uint64, error) {
	for {
		nodes, size, index, err := j.checkOnce(ctx)
		var ce *clientv2.ClusterError
		if !errors.As(err, &ce) {
			return nodes, size, index, err
		}
		j.log.Warn("failed to get from discovery server", "discovery-url", j.base, "error", err, "err-detail", ce.Detail())
		if err := j.backoff(ctx, "cluster status check"); err != nil {
			return nil, 0, 0, err
		}
	}
}

func (j *V2Joiner) checkOnce(ctx context.Context) ([]*clientv2.Node, uint64, uint64, error) {
	sizeKey := path.Join("/", j.dir, "_config", "size")
	rctx, cancel := context.WithTimeout(ctx, v2RequestTimeout)
	resp, err := j.keys.Get(rctx, sizeKey, nil)
	cancel()
	var e *clientv2.Error
	switch {
	case errors.As(err, &e) && e.Code == clientv2.ErrorCodeKeyNotFound:
		return nil, 0, 0, ErrV2SizeNotFound
	case errors.Is(err, clientv2.ErrInvalidJSON):
		return nil, 0, 0, ErrV2BadDiscoveryEndpoint
	case err != nil:
		return nil, 0, 0, err
	}
	size, err := strconv.ParseUint(resp.Node.Value, 10, 0)
	if err != nil || size == 0 {
		return nil, 0, 0, ErrV2BadSizeKey
	}
	rctx, cancel = context.WithTimeout(ctx, v2RequestTimeout)
	resp, err = j.keys.Get(rctx, j.dir, nil)
	cancel()
	if err != nil {
		return nil, 0, 0, err
	}
	var nodes []*clientv2.Node
	for _, n := range resp.Node.Nodes {
		if path.Base(n.Key) != "_config" {
			nodes = append(nodes, n)
		}
	}
	sort.Slice(nodes, func(a, b int) bool { return nodes[a].CreatedIndex < nodes[b].CreatedIndex })
	for i, n := range nodes {
		if path.Base(n.Key) == j.self {
			break
		}
		if uint64(i) >= size-1 {
			return nodes[:size], size, resp.Index, ErrV2FullCluster
		}
	}
	return nodes, size, resp.Index, nil
}

// backoff waits 2^retries seconds (at most 256), as upstream, unless ctx ends first.
func (j *V2Joiner) backoff(ctx context.Context, step string) error {
	j.retries++
	d := time.Duration(1<<min(j.retries, 8)) * time.Second
	j.log.Info("retry connecting to discovery service", "url", j.base, "reason", step, "backoff", d)
	return sleep(ctx, d)
}

// wait watches the directory until size members have registered.
func (j *V2Joiner) wait(ctx context.Context, nodes []*clientv2.Node, size, index uint64) ([]*clientv2.Node, error) {
	if uint64(len(nodes)) > size {
		nodes = nodes[:size]
	}
	all := append([]*clientv2.Node(nil), nodes...)
	for _, n := range all {
		if path.Base(n.Key) == j.self {
			j.log.Info("found self from discovery server", "discovery-url", j.base, "self", j.self)
		} else {
			j.log.Info("found peer from discovery server", "discovery-url", j.base, "peer", path.Base(n.Key))
		}
	}
	w := j.keys.Watcher(j.dir, &clientv2.WatcherOptions{AfterIndex: index, Recursive: true})
	for uint64(len(all)) < size {
		j.log.Info("found peers from discovery server; waiting for more", "discovery-url", j.base,
			"found-peers", len(all), "needed-peers", int(size)-len(all))
		resp, err := w.Next(ctx)
		var ce *clientv2.ClusterError
		if errors.As(err, &ce) {
			j.log.Warn("error while waiting for peers", "discovery-url", j.base, "error", err, "err-detail", ce.Detail())
			if err := j.backoff(ctx, "waiting for other nodes"); err != nil {
				return nil, err
			}
			nodes, n, idx, err := j.check(ctx)
			if err != nil {
				return nil, err
			}
			return j.wait(ctx, nodes, n, idx)
		}
		if err != nil {
			return nil, err
		}
		j.log.Info("found peer from discovery server", "discovery-url", j.base, "peer", path.Base(resp.Node.Key))
		all = append(all, resp.Node)
	}
	j.log.Info("found all needed peers from discovery server", "discovery-url", j.base, "found-peers", len(all))
	return all, nil
}

// v2Cluster is the initial cluster the registered values make: size distinct members.
func v2Cluster(nodes []*clientv2.Node, size uint64) (map[string][]string, error) {
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = n.Value
	}
	ic, err := membership.ParseInitialCluster(strings.Join(parts, ","))
	if err != nil {
		return nil, ErrV2InvalidURL
	}
	if uint64(len(ic)) != size {
		return nil, ErrV2DuplicateName
	}
	return ic, nil
}
