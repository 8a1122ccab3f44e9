// Package table draws the bordered tables upstream etcdctl and etcdutl print for -w table:
// upper-case headers centred in their columns, cells aligned right. Upstream 3.5 and 3.6 draw
// them in ASCII; 3.7 (tablewriter 1.x) in box-drawing characters.
package table

import (
	"fmt"
	"io"
	"strings"

	"etcdx/pkg/buildinfo"
)

// Style is the characters a table is drawn with.
type Style struct {
	// Each border line: its left end, the crossing between columns, its right end.
	top, middle, bottom  [3]string
	horizontal, vertical string
}

var (
	// ASCII is upstream 3.5's and 3.6's.
	ASCII = Style{top: [3]string{"+", "+", "+"}, middle: [3]string{"+", "+", "+"}, bottom: [3]string{"+", "+", "+"}, horizontal: "-", vertical: "|"}
	// Box is upstream 3.7's.
	Box = Style{top: [3]string{"┌", "┬", "┐"}, middle: [3]string{"├", "┼", "┤"}, bottom: [3]string{"└", "┴", "┘"}, horizontal: "─", vertical: "│"}
)

// ForLevel is the style upstream's CLIs of line level ("3.7") draw.
func ForLevel(level string) Style {
	if buildinfo.LevelAtLeast(level, "3.7") {
		return Box
	}
	return ASCII
}

// Write draws header and rows to w in style s. Underscores in headers become spaces, as
// upstream prints them.
func Write(w io.Writer, s Style, header []string, rows [][]string) {
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
	border := func(ends [3]string) string {
		parts := make([]string, len(widths))
		for i, n := range widths {
			parts[i] = strings.Repeat(s.horizontal, n+2)
		}
		return ends[0] + strings.Join(parts, ends[1]) + ends[2]
	}
	cells := make([]string, len(header))
	fmt.Fprintln(w, border(s.top))
	for i, h := range up {
		left := (widths[i] - len(h)) / 2
		cells[i] = " " + strings.Repeat(" ", left) + h + strings.Repeat(" ", widths[i]-len(h)-left) + " "
	}
	fmt.Fprintln(w, s.vertical+strings.Join(cells, s.vertical)+s.vertical)
	fmt.Fprintln(w, border(s.middle))
	for _, r := range rows {
		for i, c := range r {
			cells[i] = " " + strings.Repeat(" ", widths[i]-len(c)) + c + " "
		}
		fmt.Fprintln(w, s.vertical+strings.Join(cells, s.vertical)+s.vertical)
	}
	fmt.Fprintln(w, border(s.bottom))
}
