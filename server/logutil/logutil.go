package logutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"
	"gopkg.in/natefinch/lumberjack.v2"
)

// Upstream's values for --log-outputs, --log-format and --logger.
const (
	OutputDefault = "default"
	OutputJournal = "systemd/journal"
	OutputStderr  = "stderr"
	OutputStdout  = "stdout"

	FormatJSON    = "json"
	FormatConsole = "console"

	LoggerZap = "zap"

	// DefaultRotationConfig is upstream's --log-rotation-config-json default.
	DefaultRotationConfig = `{"maxsize": 100, "maxage": 0, "maxbackups": 0, "localtime": false, "compress": false}`
)

// ErrRotationOutput is upstream's refusal of rotation without exactly one file output.
var ErrRotationOutput = errors.New("--log-outputs requires a single file path when --log-rotate-config-json is defined")

// Config holds the logging flags.
type Config struct {
	Logger         string
	Outputs        []string
	Format         string
	Level          string
	Rotate         bool
	RotationConfig string
}

// Default is upstream's logging configuration.
func Default() Config {
	return Config{Logger: LoggerZap, Outputs: []string{OutputDefault}, Format: FormatJSON, Level: "info", RotationConfig: DefaultRotationConfig}
}

// Logger is a built logger and what must be closed with it (rotated or plain files).
type Logger struct {
	*slog.Logger
	closers []io.Closer
}

// Close flushes and releases the logger's files.
func (l *Logger) Close() error {
	var errs []error
	for _, c := range l.closers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// ParseLevel reads --log-level as upstream does (zap's level names).
func ParseLevel(s string) (zapcore.Level, error) {
	var l zapcore.Level
	if err := l.Set(s); err != nil {
		return l, fmt.Errorf("unknown log level %q (want debug, info, warn, error, dpanic, panic or fatal)", s)
	}
	return l, nil
}

// Validate reports what upstream refuses, with upstream's texts where it has them.
func (c Config) Validate() error {
	_, _, err := c.plan()
	return err
}

// plan checks the flags and returns the level and output sinks to open.
func (c Config) plan() (zapcore.Level, []string, error) {
	switch c.Logger {
	case LoggerZap, "":
	case "capnslog":
		return 0, nil, errors.New("--logger=capnslog is removed in v3.5")
	default:
		return 0, nil, fmt.Errorf("unknown logger option %q", c.Logger)
	}
	lvl, err := ParseLevel(c.Level)
	if err != nil {
		return 0, nil, err
	}
	switch c.Format {
	case FormatJSON, FormatConsole, "":
	default:
		return 0, nil, fmt.Errorf("unknown log format: %s, supported values json, console", c.Format)
	}
	outs := c.Outputs
	if len(outs) == 0 {
		outs = []string{OutputDefault}
	}
	if len(outs) > 1 {
		for _, o := range outs {
			if o == OutputDefault {
				return 0, nil, fmt.Errorf("multi logoutput for %q is not supported yet", OutputDefault)
			}
			if o == OutputJournal {
				return 0, nil, fmt.Errorf("running with systemd/journal but other '--log-outputs' values (%q) are configured with 'default'; override 'default' value with something else", outs)
			}
		}
	}
	if c.Rotate {
		files := 0
		for _, o := range outs {
			if isFile(o) {
				files++
			}
		}
		if files != 1 {
			return 0, nil, ErrRotationOutput
		}
		if _, err := c.rotation(); err != nil {
			return 0, nil, err
		}
	}
	return lvl, outs, nil
}

func isFile(output string) bool {
	switch output {
	case OutputDefault, OutputStderr, OutputStdout, OutputJournal:
		return false
	}
	return true
}

// rotation decodes --log-rotation-config-json (lumberjack's keys), with upstream's error texts.
func (c Config) rotation() (*lumberjack.Logger, error) {
	cfg := c.RotationConfig
	if cfg == "" {
		cfg = DefaultRotationConfig
	}
	var lj lumberjack.Logger
	if err := json.Unmarshal([]byte(cfg), &lj); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syntax):
			return nil, fmt.Errorf("improperly formatted log rotation config: %w", err)
		case errors.As(err, &typ):
			return nil, fmt.Errorf("invalid log rotation config: %w", err)
		default:
			return nil, fmt.Errorf("fail to unmarshal log rotation config: %w", err)
		}
	}
	return &lj, nil
}

// EncoderConfig is upstream's: lower-case levels, "ts" with microseconds, short callers.
func EncoderConfig() zapcore.EncoderConfig {
	return zapcore.EncoderConfig{
		TimeKey: "ts", LevelKey: "level", NameKey: "logger", CallerKey: "caller", MessageKey: "msg",
		StacktraceKey: "stacktrace", LineEnding: zapcore.DefaultLineEnding,
		EncodeLevel: zapcore.LowercaseLevelEncoder,
		EncodeTime: func(t time.Time, enc zapcore.PrimitiveArrayEncoder) {
			enc.AppendString(t.Format("2006-01-02T15:04:05.000000Z0700"))
		},
		EncodeDuration: zapcore.StringDurationEncoder,
		EncodeCaller:   zapcore.ShortCallerEncoder,
	}
}

// Build opens the outputs and returns the logger.
func (c Config) Build() (*Logger, error) {
	lvl, outs, err := c.plan()
	if err != nil {
		return nil, err
	}
	l := &Logger{}
	var sinks []zapcore.WriteSyncer
	seen := map[string]bool{}
	for _, o := range outs {
		if seen[o] {
			continue // upstream merges repeated outputs
		}
		seen[o] = true
		switch {
		case o == OutputDefault || o == OutputStderr:
			sinks = append(sinks, zapcore.Lock(os.Stderr))
		case o == OutputStdout:
			sinks = append(sinks, zapcore.Lock(os.Stdout))
		case o == OutputJournal:
			jw, err := newJournalWriter(os.Stderr)
			if err != nil {
				return nil, fmt.Errorf("can't find journal (%w)", err)
			}
			sinks = append(sinks, zapcore.AddSync(jw))
		case o == "/dev/null":
			sinks = append(sinks, zapcore.AddSync(io.Discard))
		case c.Rotate:
			lj, _ := c.rotation() // checked by plan
			lj.Filename = o
			l.closers = append(l.closers, lj)
			sinks = append(sinks, zapcore.AddSync(lj))
		default:
			f, err := os.OpenFile(o, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				l.Close()
				return nil, fmt.Errorf("--log-outputs: %w", err)
			}
			l.closers = append(l.closers, f)
			sinks = append(sinks, zapcore.Lock(f))
		}
	}
	enc := zapcore.NewJSONEncoder(EncoderConfig())
	if c.Format == FormatConsole {
		enc = zapcore.NewConsoleEncoder(EncoderConfig())
	}
	core := zapcore.NewCore(enc, zapcore.NewMultiWriteSyncer(sinks...), zap.NewAtomicLevelAt(lvl))
	// As upstream: after 100 lines with the same message in a second, one in 100 is kept.
	core = zapcore.NewSamplerWithOptions(core, time.Second, 100, 100)
	l.Logger = slog.New(levelHandler{
		plain: zapslog.NewHandler(core, zapslog.WithCaller(true)),
		fatal: zapslog.NewHandler(fatalCore{core}, zapslog.WithCaller(true)),
	})
	return l, nil
}
