// Command etcdutl works on a stopped member's data and on snapshot files, offline (package tool
// holds its commands).
package main

import (
	"os"

	"etcdx/etcdutl/tool"
)

func main() {
	os.Exit(tool.Run(os.Args[1:], os.Stdout, os.Stderr))
}
