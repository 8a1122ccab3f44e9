package logutil

import (
	"context"
	"log/slog"

	"go.uber.org/zap/zapcore"
)

// LevelFatal is upstream's fatal level: the line an operator's alerts look for when a member
// stops on an unrecoverable local error (a full disk, a failed commit). Logging at it does not
// exit; the caller stops the member and the process exits with status 1, as upstream's does.
const LevelFatal = slog.Level(12)

// levelHandler sends records at LevelFatal through a handler whose core writes zap's fatal
// level (zapslog maps everything above error to error) and the rest through the plain one.
type levelHandler struct{ plain, fatal slog.Handler }

func (h levelHandler) pick(l slog.Level) slog.Handler {
	if l >= LevelFatal {
		return h.fatal
	}
	return h.plain
}

func (h levelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.pick(l).Enabled(ctx, l)
}

func (h levelHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.pick(r.Level).Handle(ctx, r)
}

func (h levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelHandler{plain: h.plain.WithAttrs(attrs), fatal: h.fatal.WithAttrs(attrs)}
}

func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{plain: h.plain.WithGroup(name), fatal: h.fatal.WithGroup(name)}
}

// fatalCore raises every entry to zap's fatal level. It writes without zap's exit hook (only a
// zap.Logger adds that), so the member still closes its files before the process ends.
type fatalCore struct{ zapcore.Core }

func (c fatalCore) Enabled(zapcore.Level) bool { return c.Core.Enabled(zapcore.FatalLevel) }

func (c fatalCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	e.Level = zapcore.FatalLevel
	if !c.Core.Enabled(e.Level) {
		return ce
	}
	return ce.AddCore(e, c)
}

func (c fatalCore) With(fields []zapcore.Field) zapcore.Core { return fatalCore{c.Core.With(fields)} }
