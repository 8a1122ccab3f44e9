package printer

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"etcdx/etcdctl/cli"
	"etcdx/pkg/buildinfo"
	"etcdx/pkg/table"
)

// Formats lists the accepted --write-out values.
var Formats = []string{"simple", "json", "table", "fields", "protobuf"}

// Printer writes results to W in one format.
type Printer struct {
	W, Err io.Writer
	Format string
	Hex    bool
}

// New checks the format.
func New(w, errw io.Writer, format string, isHex bool) (*Printer, error) {
	for _, f := range Formats {
		if f == format {
			if format == "fields" && !buildinfo.LevelAtLeast(buildinfo.Level, "3.6") {
				isHex = false // 3.5's fields printer has no hex form
			}
			return &Printer{W: w, Err: errw, Format: format, Hex: isHex}, nil
		}
	}
	return nil, &cli.Error{Code: cli.ExitBadFeature, Err: fmt.Errorf("unsupported output format")}
}

// The formats a result can provide.
type (
	simpler interface{ Simple(p *Printer) }
	jsoner  interface{ JSON() any }
	tabler  interface {
		Table() (hdr []string, rows [][]string)
	}
	fielder interface{ Fields(p *Printer) }
	protoer interface{ Proto() ([]byte, error) }
)

// Print renders r.
func (p *Printer) Print(r any) error {
	switch p.Format {
	case "simple":
		if s, ok := r.(simpler); ok {
			s.Simple(p)
			return nil
		}
	case "json":
		if j, ok := r.(jsoner); ok {
			b, err := json.Marshal(j.JSON())
			if err != nil {
				return err
			}
			fmt.Fprintln(p.W, string(b))
			return nil
		}
	case "table":
		if t, ok := r.(tabler); ok {
			hdr, rows := t.Table()
			table.Write(p.W, table.ForLevel(buildinfo.Level), hdr, rows)
			return nil
		}

	case "fields":
		if f, ok := r.(fielder); ok {
			f.Fields(p)
			return nil
		}
	case "protobuf":
		if pr, ok := r.(protoer); ok {
			b, err := pr.Proto()
			if err != nil {
				return err
			}
			_, err = p.W.Write(b)
			return err
		}
	}
	return &cli.Error{Code: cli.ExitBadFeature, Err: fmt.Errorf("%s not supported as output format", p.Format)}
}

// Printf writes formatted text.
func (p *Printer) Printf(format string, a ...any) { fmt.Fprintf(p.W, format, a...) }

// Println writes a line.
func (p *Printer) Println(a ...any) { fmt.Fprintln(p.W, a...) }

// rows prints a table's rows as comma-separated lines: the simple format of tabular results.
func (p *Printer) rows(t tabler) {
	_, rows := t.Table()
	for _, row := range rows {
		p.Println(strings.Join(row, ", "))
	}
}

// id prints a fields-format ID: hex with --hex, decimal otherwise.
func (p *Printer) id(name string, v uint64) {
	if p.Hex {
		p.Printf("\"%s\" : %x\n", name, v)
	} else {
		p.Printf("\"%s\" : %d\n", name, v)
	}
}

// Bytes renders a key or value: as is, or as \x-escaped hex with --hex.
func (p *Printer) Bytes(b []byte) string {
	if !p.Hex {
		return string(b)
	}
	h := hex.EncodeToString(b)
	var sb strings.Builder
	for i := 0; i < len(h); i += 2 {
		sb.WriteString(`\x`)
		sb.WriteString(h[i : i+2])
	}
	return sb.String()
}
