package table

import (
	"strings"
	"testing"
)

// The layouts upstream's CLIs print: centred headers, right-aligned cells; ASCII up to 3.6
// (tablewriter 0.0.5's defaults), box-drawing characters from 3.7 (tablewriter 1.1's).
func TestWriteIsUpstreamsLayout(t *testing.T) {
	header, rows := []string{"hash", "total_keys"}, [][]string{{"abc", "7"}, {"1", "1234567890123"}}
	const ascii = `+------+---------------+
| HASH |  TOTAL KEYS   |
+------+---------------+
|  abc |             7 |
|    1 | 1234567890123 |
+------+---------------+
`
	for _, c := range []struct {
		level string
		want  string
	}{
		{"3.5", ascii},
		{"3.6", ascii},
		{"3.7", `┌──────┬───────────────┐
│ HASH │  TOTAL KEYS   │
├──────┼───────────────┤
│  abc │             7 │
│    1 │ 1234567890123 │
└──────┴───────────────┘
`},
	} {
		var b strings.Builder
		Write(&b, ForLevel(c.level), header, rows)
		if b.String() != c.want {
			t.Errorf("level %s: got\n%s\nwant\n%s", c.level, b.String(), c.want)
		}
	}
}
