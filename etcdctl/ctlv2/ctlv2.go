package ctlv2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	client "go.etcd.io/etcd/client/v2"
	"golang.org/x/term"
)

// Exit statuses, as upstream's.
const (
	exitError             = 1
	exitBadConnection     = 2
	exitServerError       = 4
	exitClusterNotHealthy = 5
	exitBadArgs           = 128
)

// exit ends a command with a status; msg (if any) goes to stderr first.
type exit struct {
	code int
	msg  string
}

func (e *exit) Error() string { return e.msg }

func fail(code int, format string, args ...any) error {
	return &exit{code: code, msg: fmt.Sprintf(format, args...)}
}

// env is the process's environment as the commands read it.
type env struct {
	vars   map[string]string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

func (e *env) get(k string) string { return e.vars[k] }

// Main runs etcdctl's v2 mode and returns its exit status.
func Main(version string, args, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{vars: map[string]string{}, stdin: stdin, stdout: stdout, stderr: stderr}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			e.vars[k] = v
		}
	}
	app := newApp(e, version)
	err := app.Run(append([]string{"etcdctl"}, args...))
	var x *exit
	switch {
	case err == nil:
		return 0
	case errors.As(err, &x):
		if x.msg != "" {
			fmt.Fprintln(stderr, x.msg)
		}
		return x.code
	default:
		fmt.Fprintln(stderr, err)
		return exitError
	}
}

func newApp(e *env, version string) *cli.App {
	app := cli.NewApp()
	app.Name = "etcdctl"
	app.Version = version
	app.Usage = "A simple command line client for etcd."
	app.Writer, app.ErrWriter = e.stdout, e.stderr
	app.HideVersion = false
	cli.VersionPrinter = func(c *cli.Context) {
		fmt.Fprintf(c.App.Writer, "etcdctl version: %v\n", c.App.Version)
		fmt.Fprintln(c.App.Writer, "API version: 2")
	}
	// Our exit statuses are returned, not taken by the library's os.Exit.
	app.ExitErrHandler = func(*cli.Context, error) {}
	app.Flags = []cli.Flag{
		cli.BoolFlag{Name: "debug", Usage: "output cURL commands which can be used to reproduce the request"},
		cli.BoolFlag{Name: "no-sync", Usage: "don't synchronize cluster information before sending request"},
		cli.StringFlag{Name: "output, o", Value: "simple", Usage: "output response in the given format (`simple`, `extended` or `json`)"},
		cli.StringFlag{Name: "discovery-srv, D", Usage: "domain name to query for SRV records describing cluster endpoints"},
		cli.BoolFlag{Name: "insecure-discovery", Usage: "accept insecure SRV records describing cluster endpoints"},
		cli.StringFlag{Name: "peers, C", Usage: "DEPRECATED - \"--endpoints\" should be used instead"},
		cli.StringFlag{Name: "endpoint", Usage: "DEPRECATED - \"--endpoints\" should be used instead"},
		cli.StringFlag{Name: "endpoints", Usage: "a comma-delimited list of machine addresses in the cluster (default: \"http://127.0.0.1:2379,http://127.0.0.1:4001\")"},
		cli.StringFlag{Name: "cert-file", Usage: "identify HTTPS client using this SSL certificate file"},
		cli.StringFlag{Name: "key-file", Usage: "identify HTTPS client using this SSL key file"},
		cli.StringFlag{Name: "ca-file", Usage: "verify certificates of HTTPS-enabled servers using this CA bundle"},
		cli.StringFlag{Name: "username, u", Usage: "provide username[:password] and prompt if password is not supplied."},
		cli.DurationFlag{Name: "timeout", Value: 2 * time.Second, Usage: "connection timeout per request"},
		cli.DurationFlag{Name: "total-timeout", Value: 5 * time.Second, Usage: "timeout for the command execution (except watch)"},
	}
	app.Commands = []cli.Command{
		backupCommand(e), clusterHealthCommand(e),
		mkCommand(e), mkdirCommand(e), rmCommand(e), rmdirCommand(e), getCommand(e), lsCommand(e),
		setCommand(e), setdirCommand(e), updateCommand(e), updatedirCommand(e), watchCommand(e), execWatchCommand(e),
		memberCommand(e), userCommand(e), roleCommand(e), authCommand(e),
	}
	return app
}

// opts are the global flags with their ETCDCTL_* fallbacks.
type opts struct {
	c *cli.Context
	e *env
}

func (o opts) str(flag, envKey string) string {
	if v := o.c.GlobalString(flag); v != "" {
		return v
	}
	return o.e.get(envKey)
}

func (o opts) output() string { return o.c.GlobalString("output") }

// endpoints are the SRV-discovered endpoints if asked, else --endpoints, --endpoint, --peers
// (each with its variable), else upstream's default pair, each given a scheme.
func (o opts) endpoints() ([]string, error) {
	eps, err := o.discovered()
	if err != nil {
		return nil, err
	}
	if len(eps) == 0 {
		s := ""
		for _, f := range [][2]string{{"endpoints", "ETCDCTL_ENDPOINTS"}, {"endpoint", "ETCDCTL_ENDPOINT"}, {"peers", "ETCDCTL_PEERS"}} {
			if s = o.str(f[0], f[1]); s != "" {
				break
			}
		}
		if s == "" {
			s = "http://127.0.0.1:2379,http://127.0.0.1:4001"
		}
		eps = strings.Split(s, ",")
	}
	for i, ep := range eps {
		u, err := url.Parse(ep)
		if err != nil {
			return nil, err
		}
		if u.Scheme == "" {
			u.Scheme = "http"
		}
		eps[i] = u.String()
	}
	return eps, nil
}

func (o opts) discoveryDomain() (domain string, insecure bool, service string) {
	return o.str("discovery-srv", "ETCDCTL_DISCOVERY_SRV"),
		o.c.GlobalBool("insecure-discovery") || o.e.get("ETCDCTL_INSECURE_DISCOVERY") != "",
		o.e.get("ETCDCTL_DISCOVERY_SRV_NAME")
}

func (o opts) discovered() ([]string, error) {
	domain, insecure, service := o.discoveryDomain()
	if domain == "" {
		return nil, nil
	}
	eps, err := client.NewSRVDiscover().Discover(domain, service)
	if err != nil || insecure {
		return eps, err
	}
	var secure []string
	for _, ep := range eps {
		if strings.HasPrefix(ep, "http://") {
			fmt.Fprintf(o.e.stderr, "ignoring discovered insecure endpoint %q\n", ep)
			continue
		}
		secure = append(secure, ep)
	}
	return secure, nil
}

// transport is the HTTP transport with the TLS files given; a dial waits at most 30 s, or the
// total timeout when shorter.
func (o opts) transport() (*http.Transport, error) {
	domain, insecure, _ := o.discoveryDomain()
	if insecure {
		domain = ""
	}
	tls := transport.TLSInfo{
		CertFile:      o.str("cert-file", "ETCDCTL_CERT_FILE"),
		KeyFile:       o.str("key-file", "ETCDCTL_KEY_FILE"),
		TrustedCAFile: o.str("ca-file", "ETCDCTL_CA_FILE"),
		ServerName:    domain,
	}
	dial := 30 * time.Second
	if t := o.c.GlobalDuration("total-timeout"); t != 0 && t < dial {
		dial = t
	}
	return transport.NewTransport(tls, dial)
}

func (o opts) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), o.c.GlobalDuration("total-timeout"))
}

// newClient is the v2 client over the endpoints, with the credentials of --username.
func (o opts) newClient() (client.Client, error) {
	eps, err := o.endpoints()
	if err != nil {
		return nil, err
	}
	tr, err := o.transport()
	if err != nil {
		return nil, err
	}
	cfg := client.Config{Transport: tr, Endpoints: eps, HeaderTimeoutPerRequest: o.c.GlobalDuration("timeout")}
	if u := o.str("username", "ETCDCTL_USERNAME"); u != "" {
		if cfg.Username, cfg.Password, err = o.userPassword("Password: ", u); err != nil {
			return nil, err
		}
	}
	return client.New(cfg)
}

// userPassword splits "name:password", or asks for the password on the terminal.
func (o opts) userPassword(prompt, s string) (string, string, error) {
	if name, pw, ok := strings.Cut(s, ":"); ok {
		return name, pw, nil
	}
	pw, err := o.askPassword(prompt)
	return s, pw, err
}

func (o opts) askPassword(prompt string) (string, error) {
	fmt.Fprint(o.e.stderr, prompt)
	defer fmt.Fprintln(o.e.stderr)
	f, ok := o.e.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return "", errors.New("the password must be given on a terminal (or as name:password)")
	}
	b, err := term.ReadPassword(int(f.Fd()))
	return string(b), err
}

// syncedClient is newClient with the member list synced first (unless --no-sync), as upstream:
// a cluster without published client URLs, or none reachable, ends the command.
func (o opts) syncedClient() (client.Client, error) {
	hc, err := o.newClient()
	if err != nil {
		return nil, fail(exitError, "%s", err)
	}
	debug := o.c.GlobalBool("debug")
	if debug {
		client.EnablecURLDebug()
	}
	if !o.c.GlobalBool("no-sync") {
		if debug {
			fmt.Fprintf(o.e.stderr, "start to sync cluster using endpoints(%s)\n", strings.Join(hc.Endpoints(), ","))
		}
		ctx, cancel := o.ctx()
		err := hc.Sync(ctx)
		cancel()
		switch {
		case errors.Is(err, client.ErrNoEndpoints):
			fmt.Fprintf(o.e.stderr, "etcd cluster has no published client endpoints.\n")
			fmt.Fprintf(o.e.stderr, "Try '--no-sync' if you want to access non-published client endpoints(%s).\n", strings.Join(hc.Endpoints(), ","))
			return nil, o.errorOut(exitServerError, err)
		case err != nil && isConnectionError(err):
			return nil, o.errorOut(exitBadConnection, err)
		}
		if debug {
			fmt.Fprintf(o.e.stderr, "got endpoints(%s) after sync\n", strings.Join(hc.Endpoints(), ","))
		}
	}
	if debug {
		fmt.Fprintf(o.e.stderr, "Cluster-Endpoints: %s\n", strings.Join(hc.Endpoints(), ", "))
	}
	return hc, nil
}

func isConnectionError(err error) bool {
	var ce *client.ClusterError
	if errors.As(err, &ce) {
		for _, e := range ce.Errors {
			if !isConnectionError(e) {
				return false
			}
		}
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Op == "dial" || op.Op == "read" || isConnectionError(op.Err)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// errorOut is upstream's report of a failed request: "Error:  <err>" (and a cluster error's
// detail), or the error as JSON with -o json.
func (o opts) errorOut(code int, err error) error {
	var ce *client.Error
	if o.output() == "json" && errors.As(err, &ce) {
		b, _ := jsonMarshal(ce)
		return fail(code, "%s", b)
	}
	msg := fmt.Sprintln("Error: ", err)
	var cle *client.ClusterError
	if errors.As(err, &cle) {
		msg += cle.Detail()
	}
	return fail(code, "%s", strings.TrimSuffix(msg, "\n"))
}
