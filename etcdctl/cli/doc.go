// Package cli is etcdctl's command layer on cobra, the library upstream's etcdctl is built on:
// commands are declared as a tree of Command values and turned into a cobra tree per run, so
// parsing, prefix matching, suggestions, global flags in any position, help and completion
// follow cobra as upstream's do. What is ours: the help layout of each upstream line (help.go),
// ETCDCTL_* variables for the global flags, and upstream etcdctl's exit statuses.
//
// The files:
//
//	cli.go   the Command tree turned into cobra's per run, global flags, ETCDCTL_* variables, exit
//	         statuses
//	help.go  the help layout of each upstream line
package cli
