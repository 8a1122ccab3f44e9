package logutil

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/coreos/go-systemd/v22/journal"
)

// journalWriter sends each encoded line to systemd's journal with the priority of its level,
// and to fallback when the journal refuses it (upstream's --log-outputs=systemd/journal).
type journalWriter struct {
	fallback io.Writer
}

func newJournalWriter(fallback io.Writer) (io.Writer, error) {
	if !journal.Enabled() {
		return nil, errors.New("the systemd journal socket is not available")
	}
	return journalWriter{fallback: fallback}, nil
}

func (w journalWriter) Write(p []byte) (int, error) {
	var line struct {
		Level  string `json:"level"`
		Caller string `json:"caller"`
	}
	_ = json.Unmarshal(p, &line) // a console-format line has no fields: sent at info
	pri := journal.PriInfo
	switch line.Level {
	case "debug":
		pri = journal.PriDebug
	case "warn":
		pri = journal.PriWarning
	case "error":
		pri = journal.PriErr
	case "dpanic", "panic", "fatal":
		pri = journal.PriCrit
	}
	vars := map[string]string{"PACKAGE": filepath.Dir(line.Caller), "SYSLOG_IDENTIFIER": filepath.Base(os.Args[0])}
	if err := journal.Send(string(p), pri, vars); err != nil {
		return w.fallback.Write(p)
	}
	return len(p), nil
}
