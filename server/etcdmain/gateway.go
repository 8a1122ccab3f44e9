package etcdmain

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"etcdx/server/gateway"
	"etcdx/server/logutil"
)

// subcommands are upstream's `etcd <subcommand>` forms, run by cobra as upstream runs them.
var subcommands = map[string]bool{"gateway": true, "grpc-proxy": true}

// runSubcommand runs `etcd gateway ...` and `etcd grpc-proxy ...` and returns the exit status.
func runSubcommand(args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{Use: "etcd", Short: "etcd server", SuggestFor: []string{"etcd"}}
	root.AddCommand(gatewayCommand(stderr), grpcProxyCommand(stderr))
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.Execute(); err != nil {
		return 1
	}
	return 0
}

func gatewayCommand(stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "gateway <subcommand>", Short: "gateway related command"}
	var (
		listenAddr, srv, srvName, ca string
		insecureDiscovery            bool
		endpoints                    []string
		retryDelay                   time.Duration
	)
	start := &cobra.Command{
		Use:   "start",
		Short: "start the gateway",
		Run: func(*cobra.Command, []string) {
			os.Exit(startGateway(stderr, listenAddr, srv, endpoints, retryDelay))
		},
	}
	fs := start.Flags()
	fs.StringVar(&listenAddr, "listen-addr", "127.0.0.1:23790", "listen address")
	fs.StringVar(&srv, "discovery-srv", "", "DNS domain used to bootstrap initial cluster")
	fs.StringVar(&srvName, "discovery-srv-name", "", "service name to query when using DNS discovery")
	fs.BoolVar(&insecureDiscovery, "insecure-discovery", false, "accept insecure SRV records")
	fs.StringVar(&ca, "trusted-ca-file", "", "path to the client server TLS CA file for verifying the discovered endpoints when discovery-srv is provided.")
	fs.StringSliceVar(&endpoints, "endpoints", []string{"127.0.0.1:2379"}, "comma separated etcd cluster endpoints")
	fs.DurationVar(&retryDelay, "retry-delay", time.Minute, "duration of delay before retrying failed endpoints")
	cmd.AddCommand(start)
	return cmd
}

// startGateway runs the TCP proxy until a signal, as upstream's gateway: the endpoints' schemes
// are dropped (it forwards bytes), and an endpoint that is the gateway's own address refused.
func startGateway(stderr io.Writer, listenAddr, srv string, endpoints []string, retryDelay time.Duration) int {
	built, err := logutil.Default().Build()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer built.Close()
	lg := built.Logger
	lg.Info("Running: ", "args", os.Args)
	if srv != "" {
		// As our members: DNS SRV discovery is not supported; name the endpoints instead.
		fmt.Fprintln(stderr, "--discovery-srv is not supported by this etcd; pass the client endpoints with --endpoints")
		return 1
	}
	var eps []string
	for _, ep := range endpoints {
		if u, err := url.Parse(ep); err == nil && u.Host != "" {
			ep = u.Host
		}
		if _, _, err := net.SplitHostPort(ep); err != nil {
			fmt.Printf("error parsing endpoint %q", ep) // upstream's words, on standard output
			return 1
		}
		eps = append(eps, ep)
	}
	if len(eps) == 0 {
		fmt.Println("no endpoints found")
		return 1
	}
	if err := notOwnAddress(listenAddr, eps); err != nil {
		fmt.Println(err)
		return 1
	}
	l, err := net.Listen("tcp", listenAddr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := &gateway.Proxy{Listener: l, Endpoints: eps, RetryDelay: retryDelay, Log: lg}
	if err := p.Run(ctx); err != nil {
		lg.Error("gateway stopped", "error", err.Error())
		return 1
	}
	return 0
}

// notOwnAddress refuses an endpoint that resolves to the gateway's listen address (it would
// proxy to itself), in upstream's words.
func notOwnAddress(listenAddr string, eps []string) error {
	lhost, lport, err := net.SplitHostPort(listenAddr)
	if err != nil {
		return fmt.Errorf("failed to validate listen address: %s", listenAddr)
	}
	laddrs, err := net.LookupHost(lhost)
	if err != nil {
		return fmt.Errorf("failed to resolve listen host: %s", lhost)
	}
	own := map[string]bool{}
	for _, a := range laddrs {
		own[a] = true
	}
	for _, ep := range eps {
		h, port, _ := net.SplitHostPort(ep)
		if port != lport {
			continue
		}
		addrs, err := net.LookupHost(h)
		if err != nil {
			return fmt.Errorf("failed to resolve endpoint host: %s", h)
		}
		for _, a := range addrs {
			if own[a] {
				return fmt.Errorf("SRV or endpoint (%s:%s->%s:%s) should not resolve to the gateway listen addr (%s)", h, port, a, port, listenAddr)
			}
		}
	}
	return nil
}
