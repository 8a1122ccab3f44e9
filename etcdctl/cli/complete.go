package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// CompleteCommand is the hidden command the completion scripts call: given the words of the line
// after the program name, the last being the word under the cursor, it prints the candidates.
const CompleteCommand = "__complete"

// complete prints the completions of the last of words, one per line.
func (a *App) complete(w io.Writer, words []string) {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	globals := pflag.NewFlagSet(a.Name, pflag.ContinueOnError)
	a.Globals(globals)
	_, cmd, rest := a.find(before, globals)
	if cmd == nil && hasPositional(rest, globals) {
		return // an unknown command: nothing sensible follows it
	}
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	fs.AddFlagSet(globals)
	if cmd != nil && cmd.Flags != nil {
		cmd.Flags(fs)
	}
	fs.BoolP("help", "h", false, "help")

	var cands []string
	switch {
	case strings.HasPrefix(cur, "--") && strings.Contains(cur, "="):
		name, _, _ := strings.Cut(cur[2:], "=")
		for _, v := range a.FlagValues[name] {
			cands = append(cands, "--"+name+"="+v)
		}
	case strings.HasPrefix(cur, "-"):
		fs.VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				cands = append(cands, "--"+f.Name)
			}
		})
	case len(before) > 0 && valueFlag(fs, before[len(before)-1]) != "":
		cands = a.FlagValues[valueFlag(fs, before[len(before)-1])]
	default:
		level := a.Root
		if cmd != nil {
			level = cmd.Subs
			cands = append(cands, cmd.Values...)
		}
		for _, c := range level {
			cands = append(cands, c.Name)
		}
	}
	sort.Strings(cands)
	for _, c := range cands {
		if strings.HasPrefix(c, cur) {
			fmt.Fprintln(w, c)
		}
	}
}

// hasPositional tells whether words hold anything but flags and their values.
func hasPositional(words []string, fs *pflag.FlagSet) bool {
	for i := 0; i < len(words); i++ {
		switch w := words[i]; {
		case !strings.HasPrefix(w, "-"):
			return true
		case valueFlag(fs, w) != "":
			i++
		}
	}
	return false
}

// valueFlag names the flag w is when w is a flag whose value comes in the next word.
func valueFlag(fs *pflag.FlagSet, w string) string {
	if !strings.HasPrefix(w, "-") || strings.Contains(w, "=") || !takesValue(fs, w) {
		return ""
	}
	name := strings.TrimLeft(w, "-")
	if !strings.HasPrefix(w, "--") {
		return fs.ShorthandLookup(name).Name
	}
	return name
}

// Script is the completion script for shell ("bash" or "zsh"), which asks the program itself
// (through CompleteCommand) for the candidates, so it never goes stale.
func (a *App) Script(shell string) (string, error) {
	switch shell {
	case "bash":
		return strings.ReplaceAll(bashScript, "PROG", a.Name), nil
	case "zsh":
		return strings.ReplaceAll(zshScript, "PROG", a.Name), nil
	}
	return "", BadArgs("completion is available for bash and zsh, not %q", shell)
}

// Bash splits words at "=" (COMP_WORDBREAKS), so the line is split on blanks here and, for
// --flag=value, only the part after "=" is handed back.
const bashScript = `# bash completion for PROG
_PROG_complete() {
    local line="${COMP_LINE:0:COMP_POINT}" words cur
    read -r -a words <<< "$line"
    [[ "$line" =~ [[:space:]]$ ]] && words+=("")
    cur="${words[${#words[@]}-1]}"
    local IFS=$'\n'
    COMPREPLY=($("${words[0]}" ` + CompleteCommand + ` "${words[@]:1}" 2>/dev/null))
    if [[ "$cur" == *=* && "$COMP_WORDBREAKS" == *=* ]]; then
        COMPREPLY=("${COMPREPLY[@]#*=}")
    fi
}
complete -o default -F _PROG_complete PROG
`

const zshScript = `#compdef PROG
# zsh completion for PROG
_PROG() {
    local -a cands
    cands=("${(@f)$("${words[1]}" ` + CompleteCommand + ` "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    cands=(${cands:#})
    (( ${#cands} )) && compadd -Q -- "${cands[@]}"
}
if [[ "${funcstack[1]}" == "_PROG" ]]; then
    _PROG "$@"
else
    compdef _PROG PROG
fi
`
