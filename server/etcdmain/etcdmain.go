package etcdmain

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"etcdx/pkg/buildinfo"
	"etcdx/server/embed"
	"etcdx/server/etcdserver"
	"etcdx/server/logutil"
	"etcdx/server/version"
)

// Exit statuses, as upstream's.
const (
	ExitParse  = 2 // the flag parser rejected the command line
	ExitFailed = 1 // verification failed, or the member failed
)

const usageLine = `Usage:

  etcd [flags]
    Start an etcd server.

  etcd --version
    Show the version of etcd.

  etcd -h | --help
    Show the help information about etcd.

  etcd --config-file
    Path to the server configuration file. Note that if a configuration file is provided, other command line flags and environment variables will be ignored.
`

// warning is a message for the log, kept until the logger exists.
type warning struct {
	msg  string
	args []any
}

// configured is what the command line, environment and config file add up to.
type configured struct {
	cfg      *embed.Config
	warnings []warning
}

// deprecated are upstream 3.6's warnings for flags that will go (logged when set).
var deprecated = map[string]string{
	"max-snapshots":  "--max-snapshots is deprecated in 3.6 and will be decommissioned in 3.8.",
	"v2-deprecation": "--v2-deprecation is deprecated and scheduled for removal in v3.8. The default value is enforced, ignoring user input.",
	"experimental-compact-hash-check-enabled":        "--experimental-compact-hash-check-enabled is deprecated in 3.6 and will be decommissioned in 3.7. Use '--feature-gates=CompactHashCheck=true' instead.",
	"experimental-txn-mode-write-with-shared-buffer": "--experimental-txn-mode-write-with-shared-buffer is deprecated in v3.6 and will be decommissioned in v3.7. Use '--feature-gates=TxnModeWriteWithSharedBuffer=true' instead.",
}

// deprecated35 are the flags upstream 3.5 warns about when set.
var deprecated35 = map[string]bool{"enable-v2": true, "experimental-enable-v2v3": true, "proxy": true, "proxy-failure-wait": true,
	"proxy-refresh-interval": true, "proxy-dial-timeout": true, "proxy-write-timeout": true, "proxy-read-timeout": true}

// deprecationOf is the warning for a set flag, if it is a deprecated spelling.
func deprecationOf(name string, fv *flagValues) (string, bool) {
	if !version.FlagNames36.Built(version.Local()) {
		// 3.5's own spellings; its v2 API and v2 proxy flags are deprecated there.
		if deprecated35[name] {
			return fmt.Sprintf("--%s is deprecated in 3.5 and will be decommissioned in 3.6.", name), true
		}
		return "", false
	}
	if msg, ok := deprecated[name]; ok {
		return msg, true
	}
	if now, ok := fv.renamed[name]; ok && !fv.ours[name] {
		return fmt.Sprintf("--%s is deprecated in v3.6 and will be decommissioned in v3.7. Use '--%s' instead.", name, now), true
	}
	return "", false
}

// configure reads the environment or the config file over the parsed command line, and
// checks the result. The returned config is usable only when err is nil.
func configure(fv *flagValues, environ []string) (*configured, error) {
	out := &configured{cfg: fv.cfg}
	if fv.fs.NArg() > 0 {
		return out, fmt.Errorf("%q is not a valid flag", fv.fs.Arg(0))
	}
	set := map[string]bool{}
	fv.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	path := fv.configFile
	if path == "" {
		path, _ = lookup(environ, "ETCD_CONFIG_FILE")
	}
	if path != "" {
		// As upstream: the file replaces the command line and the environment.
		fv = newFlagSet(io.Discard)
		out.cfg = fv.cfg
		fileSet, unknown, err := loadConfigFile(path, fv)
		if err != nil {
			return out, err
		}
		set = fileSet
		out.warnings = append(out.warnings, warning{"loaded server configuration, other configuration command line flags and environment variables will be ignored if provided", []any{"path", path}})
		if len(unknown) > 0 {
			out.warnings = append(out.warnings, warning{"ignoring config file keys this server does not know", []any{"path", path, "keys", unknown}})
		}
	} else {
		ws, err := applyEnv(fv, set, environ)
		out.warnings = append(out.warnings, ws...)
		if err != nil {
			return out, err
		}
		if set["listen-client-urls"] && !set["advertise-client-urls"] {
			return out, errUnsetAdvertise
		}
	}
	c := out.cfg
	c.InitialClusterState = fv.clusterState

	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if msg, ok := deprecationOf(n, fv); ok {
			out.warnings = append(out.warnings, warning{msg, nil})
		}
	}
	for old, now := range fv.renamed {
		if set[old] && set[now] {
			if now == "warning-unary-request-duration" {
				return out, errors.New("both --experimental-warning-unary-request-duration and --warning-unary-request-duration flags are set. Use only --warning-unary-request-duration")
			}
			return out, fmt.Errorf("cannot set --%s and --%s at the same time, please use --%s only", old, now, now)
		}
	}
	given := map[string]bool{}
	for name, b := range fv.experimental {
		if set[name] {
			given[name] = *b
		}
	}
	if err := c.Features.SetFromExperimental(given); err != nil {
		return out, err
	}
	if err := checkDiscoveryFlags(set, fv); err != nil {
		return out, err
	}
	if err := checkV2Flags(fv, out); err != nil {
		return out, err
	}
	return out, c.Validate()
}

// errUnsetAdvertise is upstream's text for --listen-client-urls without --advertise-client-urls.
var errUnsetAdvertise = errors.New("--advertise-client-urls is required when --listen-client-urls is set explicitly")

// applyEnv sets flags not given on the command line from non-empty ETCD_<FLAG> variables,
// as upstream: a variable that a flag also sets is an error, an unknown one a warning.
func applyEnv(fv *flagValues, set map[string]bool, environ []string) ([]warning, error) {
	var warns []warning
	used := map[string]bool{"ETCD_CONFIG_FILE": true}
	var err error
	fv.fs.VisitAll(func(f *flag.Flag) {
		key := "ETCD_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		val, ok := lookup(environ, key)
		if err != nil || !ok || val == "" || key == "ETCD_VERSION" || key == "ETCD_CONFIG_FILE" {
			return
		}
		used[key] = true
		if set[f.Name] {
			err = fmt.Errorf("conflicting environment variable %s is shadowed by corresponding command-line flag --%s (either unset environment variable or disable flag)", key, f.Name)
			return
		}
		if serr := fv.fs.Set(f.Name, val); serr != nil {
			err = fmt.Errorf("invalid value %q for %s: %v", val, key, serr)
			return
		}
		set[f.Name] = true
	})
	if err != nil {
		return warns, err
	}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "ETCD_VERSION":
			warns = append(warns, warning{"cannot set special environment variable", []any{"key", k, "value", v}})
		case strings.HasPrefix(k, "ETCD_") && !used[k] && !ignoredEnv[k]:
			warns = append(warns, warning{"unrecognized environment variable", []any{"environment-variable", kv}})
		}
	}
	return warns, nil
}

// ignoredEnv are ETCD_* variables upstream also leaves to other tools.
var ignoredEnv = map[string]bool{"ETCD_UNSUPPORTED_ARCH": true}

func lookup(environ []string, key string) (string, bool) {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// printHelp writes every flag with its default, in upstream's layout.
func printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, usageLine+"\n")
	fmt.Fprintln(w, "Flags:")
	fs.VisitAll(func(f *flag.Flag) {
		if isBool(f) {
			fmt.Fprintf(w, "  --%s\n", f.Name)
		} else {
			fmt.Fprintf(w, "  --%s '%s'\n", f.Name, f.DefValue)
		}
		fmt.Fprintf(w, "    %s\n", f.Usage)
	})
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// Main runs the etcd command and returns the process exit status.
func Main(args []string, environ []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && subcommands[args[0]] {
		return runSubcommand(args, stdout, stderr)
	}
	fv := newFlagSet(stderr)
	if err := fv.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(stdout, fv.help)
			return 0
		}
		fmt.Fprint(stderr, usageLine) // the flag package has printed the error
		return ExitParse
	}
	if fv.showVersion {
		fmt.Fprint(stdout, version.Banner())
		return 0
	}
	conf, verr := configure(fv, environ)
	cfg := conf.cfg
	built, lerr := cfg.Log.Build()
	if lerr != nil {
		// The flags that would configure the logger are what is wrong: report it on upstream's default.
		built, _ = logutil.Default().Build()
		if verr == nil {
			verr = lerr
		}
	}
	defer built.Close()
	lg := built.Logger
	lg.Info("Running: ", "args", append([]string{os.Args[0]}, args...))
	for _, w := range conf.warnings {
		lg.Warn(w.msg, w.args...)
	}
	if verr != nil {
		lg.Warn("failed to verify flags", "error", verr.Error())
		if errors.Is(verr, errUnsetAdvertise) {
			lg.Warn("advertise client URLs are not set", "error", verr.Error())
		}
		return ExitFailed
	}
	if err := version.CheckBuild(buildinfo.Level); err != nil {
		lg.Error("refusing to start", "error", err.Error())
		return ExitFailed
	}
	cfg.Logger = lg
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		lg.Error("failed to start etcd", "error", err.Error())
		var derr *etcdserver.DiscoveryError
		if errors.As(err, &derr) {
			lg.Error("do not reuse a discovery token; create a new one to bootstrap a cluster (check the data dir if a previous bootstrap succeeded)")
		}
		return ExitFailed
	}
	return waitForEnd(e, lg)
}

// waitForEnd serves until a signal, a fatal stop or a serving error, and says which.
func waitForEnd(e *embed.Etcd, lg *slog.Logger) int {
	sigc := make(chan os.Signal, 2)
	signal.Notify(sigc, syscall.SIGTERM, syscall.SIGINT)
	select {
	case sig := <-sigc:
		lg.Info("received signal; shutting down", "signal", sig.String())
		e.Close()
		endBySignal(sig)
		return 0
	case <-e.Server.Done():
		e.Close()
		if e.Server.RemovedFromCluster() {
			lg.Info("the member has been permanently removed from the cluster")
			return 0
		}
		lg.Error("member stopped after a fatal error (see the log above)")
		return ExitFailed
	case err := <-e.Err():
		lg.Error("serving failed", "error", err.Error())
		e.Close()
		return ExitFailed
	}
}

// endBySignal ends the process by the signal that stopped it, as upstream does after its
// clean-up (so a supervisor sees "terminated by SIGTERM", exit status 143 in a shell); as pid 1
// (a container's init, which the kernel does not kill so) it returns for a plain exit 0.
func endBySignal(sig os.Signal) {
	s, ok := sig.(syscall.Signal)
	if !ok || os.Getpid() == 1 {
		return
	}
	signal.Reset(s)
	if err := syscall.Kill(os.Getpid(), s); err != nil {
		return
	}
	time.Sleep(time.Second) // the default action ends the process before this returns
}
