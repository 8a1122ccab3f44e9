// Package table draws the bordered tables upstream etcdctl and etcdutl print for -w table:
// upper-case headers centred in their columns, cells aligned right.
package table

import (
	"fmt"
	"io"
	"strings"
)

// Write draws header and rows to w. Underscores in headers become spaces, as upstream prints them.
func Write(w io.Writer, header []string, rows [][]string) {
	widths := make([]int, len(header))
	up := make([]string, len(header))
	for i, h := range header {
		up[i] = strings.ToUpper(strings.ReplaceAll(h, "_", " "))
		widths[i] = len(up[i])
	}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	line := "+"
	for _, n := range widths {
		line += strings.Repeat("-", n+2) + "+"
	}
	cells := make([]string, len(header))
	fmt.Fprintln(w, line)
	for i, h := range up {
		left := (widths[i] - len(h)) / 2
		cells[i] = " " + strings.Repeat(" ", left) + h + strings.Repeat(" ", widths[i]-len(h)-left) + " "
	}
	fmt.Fprintln(w, "|"+strings.Join(cells, "|")+"|")
	fmt.Fprintln(w, line)
	for _, r := range rows {
		for i, c := range r {
			cells[i] = " " + strings.Repeat(" ", widths[i]-len(c)) + c + " "
		}
		fmt.Fprintln(w, "|"+strings.Join(cells, "|")+"|")
	}
	fmt.Fprintln(w, line)
}
