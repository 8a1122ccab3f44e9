package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func testApp(got *[]string, endpoints *[]string, prefix *bool) *App {
	return &App{
		Name:      "etcdctl",
		EnvPrefix: "ETCDCTL",
		AtLeast:   func(string) bool { return true },
		Globals: func(fs *pflag.FlagSet) {
			fs.StringSliceVar(endpoints, "endpoints", []string{"127.0.0.1:2379"}, "")
			fs.Bool("hex", false, "")
		},
		Root: []*Command{
			{Name: "get", Flags: func(fs *pflag.FlagSet) { fs.BoolVar(prefix, "prefix", false, "") },
				Run: func(c *Ctx) error { *got = append([]string{c.Path}, c.Args...); return nil }},
			{Name: "lease", Subs: []*Command{{Name: "grant", Run: func(c *Ctx) error { *got = append([]string{c.Path}, c.Args...); return nil }}}},
		},
	}
}

func TestGlobalFlagsAnywhere(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  []string
		want string
		eps  string
		pfx  bool
	}{
		{[]string{"--endpoints", "a:1", "get", "k"}, nil, "get k", "a:1", false},
		{[]string{"get", "--endpoints=b:2", "k", "--prefix"}, nil, "get k", "b:2", true},
		{[]string{"--hex", "lease", "grant", "10"}, nil, "lease grant 10", "127.0.0.1:2379", false},
		{[]string{"get", "lease"}, nil, "get lease", "127.0.0.1:2379", false},
		{[]string{"get", "k"}, []string{"ETCDCTL_ENDPOINTS=c:3", "ETCDCTL_API=3"}, "get k", "c:3", false},
		{[]string{"--endpoints=d:4", "get", "k"}, []string{"ETCDCTL_ENDPOINTS=c:3"}, "get k", "d:4", false},
		// Unambiguous prefixes name commands, at every level, as upstream's.
		{[]string{"g", "k"}, nil, "get k", "127.0.0.1:2379", false},
		{[]string{"--hex", "le", "gr", "10"}, nil, "lease grant 10", "127.0.0.1:2379", false},
	} {
		var got, eps []string
		var pfx bool
		var out, errw bytes.Buffer
		code := testApp(&got, &eps, &pfx).Main(tc.args, tc.env, nil, &out, &errw)
		if code != 0 || strings.Join(got, " ") != tc.want || strings.Join(eps, ",") != tc.eps || pfx != tc.pfx {
			t.Errorf("%v: exit %d (%s), ran %q with endpoints %v prefix %v; want %q, %s, %v", tc.args, code, errw.String(), got, eps, pfx, tc.want, tc.eps, tc.pfx)
		}
	}
}

// Exit statuses and messages of a command line etcdctl cannot run, as upstream 3.7's: cobra's
// errors on standard error, a found command's usage after a flag error.
func TestUsageErrors(t *testing.T) {
	var got, eps []string
	var pfx bool
	app := testApp(&got, &eps, &pfx)
	app.Root = append(app.Root, &Command{Name: "gist", Run: func(*Ctx) error { return nil }})
	for _, tc := range []struct {
		args        string
		code        int
		err, stdout string
	}{
		{"get --nope k", ExitError, "Error: unknown flag: --nope\nUsage:\n  etcdctl get [flags]\n", ""},
		{"nope", ExitError, "Error: unknown command \"nope\" for \"etcdctl\"\nRun 'etcdctl --help' for usage.\n", ""},
		{"g k", ExitError, "Error: unknown command \"g\" for \"etcdctl\"\n\nDid you mean this?\n\tget\n\tgist\n\nRun 'etcdctl --help' for usage.\n", ""},
		{"lase", ExitError, "Error: unknown command \"lase\" for \"etcdctl\"\n\nDid you mean this?\n\tlease\n\nRun 'etcdctl --help' for usage.\n", ""},
		{"lease", ExitOK, "", "Usage:\n  etcdctl lease [command]"},
		{"", ExitOK, "", "Usage:\n  etcdctl [command]"},
	} {
		var out, errw bytes.Buffer
		c := app.Main(strings.Fields(tc.args), nil, nil, &out, &errw)
		if c != tc.code || !strings.HasPrefix(errw.String(), tc.err) || !strings.Contains(out.String(), tc.stdout) {
			t.Errorf("%q: exit %d, stderr %q, stdout %q; want %d, %q..., ...%q...", tc.args, c, errw.String(), out.String(), tc.code, tc.err, tc.stdout)
		}
	}
}

// A command's error keeps its exit status and is said once, with no usage after it.
func TestRunErrors(t *testing.T) {
	var got, eps []string
	var pfx bool
	app := testApp(&got, &eps, &pfx)
	app.Root = append(app.Root, &Command{Name: "fail", Run: func(*Ctx) error { return BadArgs("needs an argument") }})
	var out, errw bytes.Buffer
	if c := app.Main([]string{"fail"}, nil, nil, &out, &errw); c != ExitBadArgs || errw.String() != "Error: needs an argument\n" || out.Len() != 0 {
		t.Errorf("exit %d, stderr %q, stdout %q", c, errw.String(), out.String())
	}
}

// The candidates cobra's completion scripts get from the hidden __complete command.
func TestComplete(t *testing.T) {
	var got, eps []string
	var pfx bool
	app := testApp(&got, &eps, &pfx)
	app.FlagValues = map[string][]string{"endpoints": {"a:1", "b:2"}}
	app.Root[1].Subs = append(app.Root[1].Subs, &Command{Name: "revoke", Run: func(*Ctx) error { return nil }})
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{[]string{"le"}, "lease"},
		{[]string{"lease", ""}, "grant revoke"},
		{[]string{"--hex", "lease", "r"}, "revoke"},
		{[]string{"get", "--p"}, "--prefix"},
		{[]string{"get", "--endpoints", ""}, "a:1 b:2"},
		{[]string{"get", "--endpoints=b"}, "a:1 b:2"},
	} {
		var out, errw bytes.Buffer
		if code := app.Main(append([]string{"__completeNoDesc"}, tc.words...), nil, nil, &out, &errw); code != 0 {
			t.Fatalf("%v: exit %d %s", tc.words, code, errw.String())
		}
		var cands []string
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if !strings.HasPrefix(l, ":") {
				cands = append(cands, l)
			}
		}
		if g := strings.Join(cands, " "); g != tc.want {
			t.Errorf("complete %q: %q, want %q", tc.words, g, tc.want)
		}
	}
}
