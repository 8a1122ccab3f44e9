package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"etcdx/discovery/service"
	"etcdx/server/embed"
)

// serveFlags configure `discovery serve`.
type serveFlags struct {
	member      *embed.Config
	endpoints   []string
	listenAPI   string
	defaultSize int
	maxSize     int
}

func serve(args []string, stdout, stderr io.Writer) error {
	sf := serveFlags{member: embed.NewConfig()}
	m := sf.member
	m.Name = "discovery"
	fs := newFlagSet("serve", stderr)
	fs.StringVar(&sf.listenAPI, "listen-api-url", "http://localhost:2381", "URL the token API listens on.")
	fs.StringSliceVar(&sf.endpoints, "endpoints", nil, "Client URLs of an existing etcd cluster to keep the tokens in, instead of running a member here.")
	fs.IntVar(&sf.defaultSize, "default-size", 3, "Cluster size of tokens created without ?size.")
	fs.IntVar(&sf.maxSize, "max-size", 15, "Largest cluster size a token may ask for.")
	fs.StringVar(&m.Name, "name", m.Name, "Name of the member that holds the tokens.")
	fs.StringVar(&m.Dir, "data-dir", "", "Data directory of that member (default NAME.etcd).")
	fs.StringSliceVar(&m.ListenClientUrls, "listen-client-urls", m.ListenClientUrls, "URLs the member listens on for clients; new members register here (--discovery-endpoints).")
	fs.StringSliceVar(&m.AdvertiseClientUrls, "advertise-client-urls", nil, "Client URLs to hand out as discovery endpoints (default: --listen-client-urls).")
	fs.StringSliceVar(&m.ListenPeerUrls, "listen-peer-urls", m.ListenPeerUrls, "URLs the member listens on for peer traffic.")
	fs.StringSliceVar(&m.AdvertisePeerUrls, "initial-advertise-peer-urls", nil, "Peer URLs of the member (default: --listen-peer-urls).")
	fs.StringVar(&m.Log.Level, "log-level", m.Log.Level, "Log level: debug, info, warn or error.")
	if err := parse(fs, args, nil, false); err != nil {
		return err
	}
	if sf.defaultSize < 1 || sf.defaultSize > sf.maxSize {
		return usageError{fmt.Errorf("--default-size must be from 1 to --max-size (%d), got %d", sf.maxSize, sf.defaultSize)}
	}
	apiURL, err := url.Parse(sf.listenAPI)
	if err != nil || apiURL.Scheme != "http" || apiURL.Host == "" {
		return usageError{fmt.Errorf("--listen-api-url: want http://host:port, got %q", sf.listenAPI)}
	}
	if len(m.AdvertiseClientUrls) == 0 {
		m.AdvertiseClientUrls = m.ListenClientUrls
	}
	if len(m.AdvertisePeerUrls) == 0 {
		m.AdvertisePeerUrls = m.ListenPeerUrls
	}
	lg, err := m.Log.Build()
	if err != nil {
		return usageError{fmt.Errorf("--log-level: %w", err)}
	}
	m.Logger = lg.Logger
	if err := m.Validate(); err != nil && len(sf.endpoints) == 0 {
		return usageError{err}
	}

	fail := make(chan error, 2)
	endpoints := sf.endpoints
	if len(endpoints) == 0 {
		e, err := embed.StartEtcd(m)
		if err != nil {
			return fmt.Errorf("start the member that holds the tokens: %w", err)
		}
		defer e.Close()
		go func() {
			select {
			case err := <-e.Err():
				fail <- fmt.Errorf("member: %w", err)
			case <-e.Server.Done():
				fail <- errors.New("the member that holds the tokens stopped (see log)")
			}
		}()
		endpoints = m.AdvertiseClientUrls
		select {
		case <-e.Server.ReadyNotify():
		case err := <-fail:
			return err
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, Logger: zap.NewNop(), DialTimeout: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("connect to the discovery cluster %v: %w", endpoints, err)
	}
	defer cli.Close()

	l, err := net.Listen("tcp", apiURL.Host)
	if err != nil {
		return fmt.Errorf("--listen-api-url: %w", err)
	}
	api := &http.Server{Handler: service.Handler(service.Config{Client: cli, Endpoints: endpoints,
		DefaultSize: sf.defaultSize, MaxSize: sf.maxSize, Logger: lg.Logger}), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := api.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fail <- fmt.Errorf("token API: %w", err)
		}
	}()
	lg.Info("discovery service ready", slog.String("api-url", "http://"+l.Addr().String()), slog.Any("discovery-endpoints", endpoints))
	fmt.Fprintf(stdout, "discovery service ready: token API http://%s, discovery endpoints %v\n", l.Addr(), endpoints)
	err = waitForSignal(stderr, fail)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	api.Shutdown(ctx) //nolint:errcheck // shutting down anyway
	return err
}
