package etcdmain

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// configureArgs parses args as the command line and configures with environ.
func configureArgs(t *testing.T, args, environ []string) (*configured, error) {
	t.Helper()
	fv := newFlagSet(io.Discard)
	if err := fv.fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return configure(fv, environ)
}

func warned(c *configured, msg string) bool {
	for _, w := range c.warnings {
		if strings.Contains(w.msg, msg) {
			return true
		}
	}
	return false
}

// The command line, the environment and the config file, as upstream weighs them.
func TestConfigure(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "etcd.yaml")
	if err := os.WriteFile(file, []byte("name: from-file\ndata-dir: "+dir+"\nno-such-key: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		args    []string
		environ []string
		err     string // a part of the error, "" for none
		check   func(*configured) bool
	}{
		{name: "flags", args: []string{"--name", "a"}, check: func(c *configured) bool { return c.cfg.Name == "a" }},
		{name: "an environment variable sets an unset flag", environ: []string{"ETCD_NAME=b"}, check: func(c *configured) bool { return c.cfg.Name == "b" }},
		{name: "an empty variable is ignored", environ: []string{"ETCD_NAME="}, check: func(c *configured) bool { return c.cfg.Name == "default" }},
		{name: "a variable shadowed by a flag", args: []string{"--name", "a"}, environ: []string{"ETCD_NAME=b"},
			err: "conflicting environment variable ETCD_NAME is shadowed by corresponding command-line flag --name"},
		{name: "a variable with a bad value", environ: []string{"ETCD_SNAPSHOT_COUNT=many"}, err: `invalid value "many" for ETCD_SNAPSHOT_COUNT`},
		{name: "an unknown variable is a warning", environ: []string{"ETCD_NO_SUCH=1"}, check: func(c *configured) bool { return warned(c, "unrecognized environment variable") }},
		{name: "ETCD_VERSION is special", environ: []string{"ETCD_VERSION=3"}, check: func(c *configured) bool { return warned(c, "cannot set special environment variable") }},
		{name: "a positional argument", args: []string{"x"}, err: `"x" is not a valid flag`},
		{name: "listen without advertise", args: []string{"--listen-client-urls", "http://127.0.0.1:2379"}, err: errUnsetAdvertise.Error()},
		{name: "the config file replaces the command line", args: []string{"--name", "a", "--config-file", file},
			check: func(c *configured) bool {
				return c.cfg.Name == "from-file" && warned(c, "other configuration command line flags and environment variables will be ignored") &&
					warned(c, "ignoring config file keys this server does not know")
			}},
		{name: "the config file from the environment", environ: []string{"ETCD_CONFIG_FILE=" + file}, check: func(c *configured) bool { return c.cfg.Name == "from-file" }},
		{name: "a missing config file", args: []string{"--config-file", filepath.Join(dir, "none.yaml")}, err: "none.yaml"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := configureArgs(t, c.args, c.environ)
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one with %q", err, c.err)
			case c.err == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.check != nil && !c.check(got):
				t.Fatalf("configured %+v, warnings %+v", got.cfg, got.warnings)
			}
		})
	}
}
