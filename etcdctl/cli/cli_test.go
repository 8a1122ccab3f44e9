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

func TestUsageErrors(t *testing.T) {
	var got, eps []string
	var pfx bool
	for args, code := range map[string]int{"get --nope k": ExitBadUsage, "nope": ExitBadUsage, "lease": ExitOK, "": ExitOK} {
		var out, errw bytes.Buffer
		if c := testApp(&got, &eps, &pfx).Main(strings.Fields(args), nil, nil, &out, &errw); c != code {
			t.Errorf("%q: exit %d, want %d (%s)", args, c, code, errw.String())
		}
	}
}

// The candidates the completion scripts get for the word under the cursor (the last argument).
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
		{[]string{""}, "get lease"},
		{[]string{"le"}, "lease"},
		{[]string{"lease", ""}, "grant revoke"},
		{[]string{"--hex", "lease", "r"}, "revoke"},
		{[]string{"get", "--p"}, "--prefix"},
		{[]string{"get", "--"}, "--endpoints --help --hex --prefix"},
		{[]string{"get", "--endpoints", ""}, "a:1 b:2"},
		{[]string{"get", "--endpoints=b"}, "--endpoints=b:2"},
		{[]string{"nosuch", ""}, ""},
	} {
		var out bytes.Buffer
		if code := app.Main(append([]string{CompleteCommand}, tc.words...), nil, nil, &out, &out); code != 0 {
			t.Fatalf("%v: exit %d", tc.words, code)
		}
		if g := strings.Join(strings.Fields(out.String()), " "); g != tc.want {
			t.Errorf("complete %q: %q, want %q", tc.words, g, tc.want)
		}
	}
}
