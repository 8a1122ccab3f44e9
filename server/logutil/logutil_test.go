package logutil

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "x.log")
	cases := []struct {
		name string
		cfg  func(c *Config)
		want string // "" for valid
	}{
		{"defaults", func(c *Config) {}, ""},
		{"capnslog", func(c *Config) { c.Logger = "capnslog" }, "--logger=capnslog is removed in v3.5"},
		{"unknown logger", func(c *Config) { c.Logger = "logrus" }, `unknown logger option "logrus"`},
		{"level", func(c *Config) { c.Level = "loud" }, `unknown log level "loud"`},
		{"every upstream level", func(c *Config) { c.Level = "dpanic" }, ""},
		{"format", func(c *Config) { c.Format = "xml" }, "unknown log format: xml, supported values json, console"},
		{"default with another", func(c *Config) { c.Outputs = []string{"default", "stdout"} }, `multi logoutput for "default" is not supported yet`},
		{"two plain outputs", func(c *Config) { c.Outputs = []string{"stderr", file} }, ""},
		{"rotation without a file", func(c *Config) { c.Rotate = true }, "--log-outputs requires a single file path"},
		{"rotation with two files", func(c *Config) { c.Rotate, c.Outputs = true, []string{file, file + "2"} }, "--log-outputs requires a single file path"},
		{"rotation", func(c *Config) { c.Rotate, c.Outputs = true, []string{file} }, ""},
		{"rotation json syntax", func(c *Config) { c.Rotate, c.Outputs, c.RotationConfig = true, []string{file}, "{" }, "improperly formatted log rotation config"},
		{"rotation json type", func(c *Config) { c.Rotate, c.Outputs, c.RotationConfig = true, []string{file}, `{"maxsize":"big"}` }, "invalid log rotation config"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Default()
			c.cfg(&cfg)
			err := cfg.Validate()
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// fileLogger builds the default logger writing to a file; lines closes it and returns them.
func fileLogger(t *testing.T) (l *Logger, lines func() [][]byte) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "etcd.log")
	cfg := Default()
	cfg.Outputs = []string{file}
	l, err := cfg.Build()
	if err != nil {
		t.Fatal(err)
	}
	return l, func() [][]byte {
		l.Close()
		b, _ := os.ReadFile(file)
		return bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	}
}

// TestLinesAsUpstream: a line carries upstream's keys in upstream's order and forms.
func TestLinesAsUpstream(t *testing.T) {
	l, logged := fileLogger(t)
	l.Info("ready to serve client requests", "took", 1500000000)
	l.Debug("not at info level")
	lines := logged()
	if len(lines) != 1 {
		t.Fatalf("%d lines: %s", len(lines), bytes.Join(lines, []byte("\n")))
	}
	if !bytes.HasPrefix(lines[0], []byte(`{"level":"info","ts":"`)) || !bytes.Contains(lines[0], []byte(`"caller":"logutil/logutil_test.go:`)) ||
		!bytes.Contains(lines[0], []byte(`"msg":"ready to serve client requests"`)) {
		t.Fatalf("line %s", lines[0])
	}
	var m map[string]any
	if err := json.Unmarshal(lines[0], &m); err != nil {
		t.Fatal(err)
	}
}

// TestFatalLevel: a record at LevelFatal is written at upstream's "fatal" level, with its
// fields and the logger's attributes, and logging it does not end the process.
func TestFatalLevel(t *testing.T) {
	l, logged := fileLogger(t)
	l.With("member-id", "8e9e05c52164694d").Log(context.Background(), LevelFatal, "failed to commit tx", "error", "no space left on device")
	l.Error("an error stays an error")
	lines := logged()
	if len(lines) != 2 {
		t.Fatalf("%d lines: %s", len(lines), bytes.Join(lines, []byte("\n")))
	}
	var fatal, plain map[string]any
	if err := json.Unmarshal(lines[0], &fatal); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(lines[1], &plain); err != nil {
		t.Fatal(err)
	}
	if fatal["level"] != "fatal" || fatal["msg"] != "failed to commit tx" || fatal["error"] != "no space left on device" || fatal["member-id"] != "8e9e05c52164694d" {
		t.Fatalf("fatal line %s", lines[0])
	}
	if plain["level"] != "error" {
		t.Fatalf("error line %s", lines[1])
	}
}
