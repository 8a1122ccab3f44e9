package commands

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/client/pkg/v3/srv"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"golang.org/x/term"
	"google.golang.org/grpc"
	"google.golang.org/grpc/grpclog"

	"etcdx/etcdctl/cli"
	"etcdx/etcdctl/printer"
	"etcdx/pkg/buildinfo"
)

// global holds the flags every command takes.
type global struct {
	endpoints                      []string
	dialTimeout, commandTimeout    time.Duration
	keepAliveTime, keepAliveTimout time.Duration
	maxRequestBytes, maxRecvBytes  int
	cacert, cert, key              string
	insecureTransport, skipVerify  bool
	user, password                 string
	writeOut                       string
	hex, debug                     bool
	// DNS SRV discovery of the endpoints (_etcd-client._tcp.<domain>).
	discoverySrv, discoverySrvName string
	insecureDiscovery              bool
	// token is a JWT sent instead of a user's password (3.7).
	token string
	// level is the upstream line the commands behave as.
	level string
}

func (g *global) atLeast(level string) bool { return buildinfo.LevelAtLeast(g.level, level) }

// sinceLevel is text from the given level on, and nothing before it (help that changed).
func sinceLevel(g *global, level, text string) string {
	if g.atLeast(level) {
		return text
	}
	return ""
}

func (g *global) register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&g.endpoints, "endpoints", []string{"127.0.0.1:2379"}, "gRPC endpoints")
	fs.BoolVar(&g.debug, "debug", false, "enable client-side debug logging")
	fs.StringVarP(&g.writeOut, "write-out", "w", "simple", "set the output format (fields, json, protobuf, simple, table)")
	fs.BoolVar(&g.hex, "hex", false, "print byte strings as hex encoded strings")
	fs.DurationVar(&g.dialTimeout, "dial-timeout", 2*time.Second, "dial timeout for client connections")
	fs.DurationVar(&g.commandTimeout, "command-timeout", 5*time.Second, "timeout for short running command (excluding dial timeout)")
	fs.DurationVar(&g.keepAliveTime, "keepalive-time", 2*time.Second, "keepalive time for client connections")
	fs.DurationVar(&g.keepAliveTimout, "keepalive-timeout", 6*time.Second, "keepalive timeout for client connections")
	if g.atLeast("3.6") {
		fs.IntVar(&g.maxRequestBytes, "max-request-bytes", 0, "client-side request send limit in bytes (if 0, it defaults to 2.0 MiB (2 * 1024 * 1024).)")
		fs.IntVar(&g.maxRecvBytes, "max-recv-bytes", 0, "client-side response receive limit in bytes (if 0, it defaults to \"math.MaxInt32\")")
	}
	fs.BoolVar(&g.insecureTransport, "insecure-transport", true, "disable transport security for client connections")
	fs.BoolVar(&g.skipVerify, "insecure-skip-tls-verify", false, "skip server certificate verification (CAUTION: this option should be enabled only for testing purposes)")
	fs.StringVar(&g.cert, "cert", "", "identify secure client using this TLS certificate file")
	fs.StringVar(&g.key, "key", "", "identify secure client using this TLS key file")
	fs.StringVar(&g.cacert, "cacert", "", "verify certificates of TLS-enabled secure servers using this CA bundle")
	fs.StringVar(&g.user, "user", "", "username[:password] for authentication (prompt if password is not supplied)")
	fs.StringVar(&g.password, "password", "", "password for authentication (if this option is used, --user option shouldn't include password)")
	fs.BoolVar(&g.insecureDiscovery, "insecure-discovery", true, "accept insecure SRV records describing cluster endpoints")
	fs.StringVarP(&g.discoverySrv, "discovery-srv", "d", "", "domain name to query for SRV records describing cluster endpoints")
	fs.StringVar(&g.discoverySrvName, "discovery-srv-name", "", "service name to query when using DNS discovery")
	if g.atLeast("3.7") {
		fs.StringVar(&g.token, "auth-jwt-token", "", "JWT token used for authentication (if this option is used, --user and --password should not be set)")
	}
}

// discover replaces --endpoints with the client URLs the SRV records of --discovery-srv name,
// when there are any, as upstream does; unless --insecure-discovery, only https ones.
func (g *global) discover(stderr io.Writer) error {
	if g.discoverySrv == "" {
		return nil
	}
	found, err := srv.GetClient("etcd-client", g.discoverySrv, g.discoverySrvName)
	if err != nil {
		return &cli.Error{Code: cli.ExitError, Err: err}
	}
	var eps []string
	for _, ep := range found.Endpoints {
		if !g.insecureDiscovery && strings.HasPrefix(ep, "http://") {
			fmt.Fprintf(stderr, "ignoring discovered insecure endpoint %q\n", ep)
			continue
		}
		eps = append(eps, ep)
	}
	if len(eps) > 0 {
		g.endpoints = eps
	}
	return nil
}

// env is what a command runs with.
type env struct {
	*cli.Ctx
	g      *global
	out    *printer.Printer
	client *clientv3.Client
}

// run adapts a command body: it builds the printer and closes the client afterwards.
func run(g *global, body func(e *env) error) func(c *cli.Ctx) error {
	return func(c *cli.Ctx) error {
		p, err := printer.New(c.Stdout, c.Stderr, g.writeOut, g.hex)
		if err != nil {
			return err
		}
		if g.debug {
			grpclog.SetLoggerV2(grpclog.NewLoggerV2WithVerbosity(c.Stderr, c.Stderr, c.Stderr, 4))
		} else {
			grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, c.Stderr))
		}
		if err := g.discover(c.Stderr); err != nil {
			return err
		}
		e := &env{Ctx: c, g: g, out: p}
		defer func() {
			if e.client != nil {
				e.client.Close()
			}
		}()
		return body(e)
	}
}

// spec is the client configuration the global flags describe, for the given endpoints.
func (e *env) spec(endpoints []string) (*clientv3.ConfigSpec, error) {
	g := e.g
	s := &clientv3.ConfigSpec{Endpoints: endpoints, DialTimeout: g.dialTimeout, KeepAliveTime: g.keepAliveTime,
		KeepAliveTimeout: g.keepAliveTimout, MaxCallSendMsgSize: g.maxRequestBytes, MaxCallRecvMsgSize: g.maxRecvBytes}
	secure := g.cert != "" || g.key != "" || g.cacert != "" || g.skipVerify || !g.insecureTransport
	for _, ep := range endpoints {
		if strings.HasPrefix(ep, "https://") {
			secure = true
		}
	}
	if secure {
		s.Secure = &clientv3.SecureConfig{Cert: g.cert, Key: g.key, Cacert: g.cacert, InsecureTransport: false, InsecureSkipVerify: g.skipVerify}
		if g.discoverySrv != "" && !g.insecureDiscovery {
			s.Secure.ServerName = g.discoverySrv // the certificates name the discovery domain
		}
	}
	if g.token != "" {
		return s, nil // the token wins over --user, as upstream's
	}
	if g.user != "" {
		name, pass, hasPass := strings.Cut(g.user, ":")
		if hasPass && g.password != "" {
			return nil, &cli.Error{Code: cli.ExitError, Err: fmt.Errorf("--user includes a password; do not also give --password")}
		}
		if !hasPass {
			if g.password == "" {
				p, err := e.askPassword(name)
				if err != nil {
					return nil, err
				}
				g.password = p // asked once, even when a command makes several clients
			}
			pass = g.password
		}
		s.Auth = &clientv3.AuthConfig{Username: name, Password: pass}
	}
	return s, nil
}

// terminal is the file behind a standard stream when it is a terminal.
func terminal(stream any) (*os.File, bool) {
	f, ok := stream.(*os.File)
	return f, ok && term.IsTerminal(int(f.Fd()))
}

// askPassword prompts for the password of --user on the terminal, without echo. Without a
// terminal there is no one to ask.
func (e *env) askPassword(name string) (string, error) {
	f, ok := terminal(e.Stdin)
	if !ok {
		return "", &cli.Error{Code: cli.ExitError, Err: fmt.Errorf("--user %s has no password and standard input is not a terminal to ask for it: give it as --user %s:<password> or --password", name, name)}
	}
	fmt.Fprint(e.Stderr, "Password: ")
	b, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(e.Stderr)
	if err != nil {
		return "", &cli.Error{Code: cli.ExitError, Err: fmt.Errorf("reading the password: %w", err)}
	}
	return string(b), nil
}

// newClient connects to endpoints with the global flags' settings.
func (e *env) newClient(endpoints []string) (*clientv3.Client, error) {
	s, err := e.spec(endpoints)
	if err != nil {
		return nil, err
	}
	lg := zap.NewNop()
	if e.g.debug {
		lg, _ = zap.NewDevelopment()
	}
	cfg, err := clientv3.NewClientConfig(s, lg)
	if err != nil {
		return nil, &cli.Error{Code: cli.ExitBadArgs, Err: err}
	}
	if e.g.token != "" {
		cfg.DialOptions = append(cfg.DialOptions, grpc.WithPerRPCCredentials(jwtToken(e.g.token)))
	}
	c, err := clientv3.New(*cfg)
	if err != nil {
		return nil, &cli.Error{Code: cli.ExitBadConnection, Err: err}
	}
	return c, nil
}

// cl is the client for --endpoints, made on first use.
func (e *env) cl() (*clientv3.Client, error) {
	if e.client == nil {
		c, err := e.newClient(e.g.endpoints)
		if err != nil {
			return nil, err
		}
		e.client = c
	}
	return e.client, nil
}

// ctx bounds a short command by --command-timeout.
func (e *env) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), e.g.commandTimeout)
}

// call runs one short request against the client with the command timeout.
func call[T any](e *env, f func(ctx context.Context, c *clientv3.Client) (T, error)) (T, error) {
	var zero T
	c, err := e.cl()
	if err != nil {
		return zero, err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	return f(ctx, c)
}

// jwtToken sends a JWT the way the server reads an authenticated caller's token: in the
// "token" metadata of every call, with no Authenticate first.
type jwtToken string

func (t jwtToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"token": string(t)}, nil
}

// RequireTransportSecurity is false: upstream's etcdctl sends the token over plain connections too.
func (jwtToken) RequireTransportSecurity() bool { return false }
