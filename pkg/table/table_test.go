package table

import (
	"strings"
	"testing"
)

// The layout upstream's CLIs print (tablewriter's defaults): centred headers, right-aligned cells.
func TestWriteIsUpstreamsLayout(t *testing.T) {
	var b strings.Builder
	Write(&b, []string{"hash", "total_keys"}, [][]string{{"abc", "7"}, {"1", "1234567890123"}})
	want := `+------+---------------+
| HASH |  TOTAL KEYS   |
+------+---------------+
|  abc |             7 |
|    1 | 1234567890123 |
+------+---------------+
`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}
