package commands

import (
	"os"
	"regexp"
	"testing"

	"etcdx/etcdctl/cli"
)

// docs/etcdctl.md (written by scripts/etcdctl-examples.sh) has a real example of every command
// of the default level.
func TestEveryCommandHasAnExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/etcdctl.md")
	if err != nil {
		t.Fatal(err)
	}
	app := App()
	var walk func(prefix string, cs []*cli.Command)
	walk = func(prefix string, cs []*cli.Command) {
		for _, c := range cs {
			path := prefix + c.Name
			example := regexp.MustCompile(`etcdctl ` + regexp.QuoteMeta(path) + `([^\w-]|$)`)
			if c.Run != nil && app.Has(c) && !example.Match(doc) {
				t.Errorf("docs/etcdctl.md has no example of %q: add one to scripts/etcdctl-examples.sh and run make etcdctl-docs", path)
			}
			walk(path+" ", c.Subs)
		}
	}
	walk("", app.Root)
}
