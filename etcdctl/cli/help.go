package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// optionsLine closes every 3.7 help text, where the global flags are hidden.
const optionsLine = `Use "%s options" for a list of global command-line options (applies to all commands).`

// grouped says whether the level shows 3.7's help: cobra's own layout with the commands in
// titled groups, the global flags hidden and listed by an "options" command. Earlier lines
// print every runnable command flat, in NAME/USAGE/OPTIONS sections.
func (a *App) grouped() bool { return a.AtLeast("3.7") }

func (a *App) layout(root *cobra.Command) {
	if !a.grouped() {
		root.SetUsageFunc(func(c *cobra.Command) error { return a.classicUsage(c.OutOrStdout(), c) })
		root.SetHelpTemplate("{{.UsageString}}")
		return
	}
	root.SetHelpCommandGroupID(a.HelpGroup)
	root.AddCommand(a.optionsCommand(root))
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) { f.Hidden = true })
	root.Flags().BoolP("help", "h", false, "help for "+a.Name)
	_ = root.Flags().MarkHidden("help")
	cobraHelp := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		cobraHelp(c, args)
		fmt.Fprintf(c.OutOrStdout(), optionsLine+"\n", a.Name)
	})
}

// optionsCommand lists the global flags 3.7's help hides.
func (a *App) optionsCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{Use: "options", Short: "Show the global command-line flags", GroupID: a.HelpGroup,
		Run: func(c *cobra.Command, _ []string) {
			shown := pflag.NewFlagSet("global", pflag.ContinueOnError)
			root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
				g := *f
				g.Hidden = false
				shown.AddFlag(&g)
			})
			fmt.Fprint(c.OutOrStdout(), "The following options can be passed to any command:\n\n", shown.FlagUsages())
		}}
}

// usageAfterError prints, after a flag or argument error, what upstream's line prints: 3.7
// the command's usage on standard error; earlier lines the usage on standard output and an
// empty line on standard error.
func (a *App) usageAfterError(cmd *cobra.Command, stdout, stderr io.Writer) {
	if a.grouped() {
		fmt.Fprintln(stderr, cmd.UsageString())
		return
	}
	_ = a.classicUsage(stdout, cmd)
	fmt.Fprintln(stderr)
}

// classicUsage is the help of the lines before 3.7: tab-aligned sections, every runnable
// command below c listed by its path, flags in --name=default form.
func (a *App) classicUsage(w io.Writer, c *cobra.Command) error {
	// 3.5 starts each line with a tab and indents only a section's first line; 3.6 indents
	// every line by two spaces.
	indent := func(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }
	spacer := ""
	if !a.AtLeast("3.6") {
		indent = func(s string) string { return "\t" + s }
		spacer = "\n"
	}
	var b strings.Builder
	name := c.Name()
	if c.HasParent() {
		name = relativePath(c, c.Root())
	}
	fmt.Fprintf(&b, "NAME:\n%s\n\nUSAGE:\n%s\n", indent(name+" - "+c.Short), indent(c.UseLine()))
	if !c.HasParent() {
		fmt.Fprintf(&b, "\nVERSION:\n%s\n", indent(a.Version))
	}
	if c.HasSubCommands() {
		fmt.Fprintf(&b, "\nAPI VERSION:\n%s\n", indent(a.APIVersion))
	}
	if c.HasExample() && a.AtLeast("3.6") {
		fmt.Fprintf(&b, "\nExamples:\n%s\n", c.Example)
	}
	if c.HasSubCommands() {
		fmt.Fprintf(&b, "%s\nCOMMANDS:\n", spacer)
		for _, s := range descendants(c) {
			if s.Runnable() {
				fmt.Fprintf(&b, "%s\n", indent(relativePath(s, c)+"\t"+s.Short))
			}
		}
	}
	if c.Long != "" {
		b.WriteString("\nDESCRIPTION:\n")
		for _, line := range strings.Split(strings.Trim(c.Long, "\n\t "), "\n") {
			fmt.Fprintf(&b, "%s\n", indent(line))
		}
	}
	if c.HasLocalFlags() {
		fmt.Fprintf(&b, "\nOPTIONS:\n%s", classicFlags(c.LocalFlags()))
	}
	if c.HasInheritedFlags() {
		fmt.Fprintf(&b, "\nGLOBAL OPTIONS:\n%s", classicFlags(c.InheritedFlags()))
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(w, 0, 8, 1, '\t', 0)
	if _, err := io.WriteString(tw, b.String()); err != nil {
		return err
	}
	return tw.Flush()
}

// relativePath is c's path below top ("lease grant" below the root, "grant" below lease).
func relativePath(c, top *cobra.Command) string {
	parts := []string{c.Name()}
	for c.HasParent() && c.Parent().Name() != top.Name() {
		c = c.Parent()
		parts = append([]string{c.Name()}, parts...)
	}
	return strings.Join(parts, " ")
}

// descendants is every command below c, depth first in cobra's (sorted) order.
func descendants(c *cobra.Command) []*cobra.Command {
	var all []*cobra.Command
	for _, s := range c.Commands() {
		all = append(all, s)
		all = append(all, descendants(s)...)
	}
	return all
}

// classicFlags lists flags as the lines before 3.7 do: "--name=default" with the default
// quoted for strings and bracketed for flags that need no value, then a tab and the usage.
func classicFlags(fs *pflag.FlagSet) string {
	var b strings.Builder
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Deprecated != "" || f.Hidden {
			return
		}
		if f.Shorthand != "" {
			fmt.Fprintf(&b, "  -%s, --%s", f.Shorthand, f.Name)
		} else {
			fmt.Fprintf(&b, "      --%s", f.Name)
		}
		def := f.DefValue
		if f.Value.Type() == "string" {
			def = fmt.Sprintf("%q", def)
		}
		if f.NoOptDefVal != "" {
			fmt.Fprintf(&b, "[=%s]", def)
		} else {
			fmt.Fprintf(&b, "=%s", def)
		}
		fmt.Fprintf(&b, "\t%s\n", f.Usage)
	})
	return b.String()
}
