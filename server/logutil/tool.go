package logutil

import (
	"io"
	"log/slog"

	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"
)

// ToolLogger is the log of upstream's offline tool (etcdutl): zap's console form on w, one
// line per event, "time<TAB>level<TAB>caller<TAB>message<TAB>{fields as JSON}", times to the
// second (RFC 3339), info and above. Scripts and upstream's tests wait for its messages
// ("finished defragmenting directory", "added member").
func ToolLogger(w io.Writer) *slog.Logger {
	ec := EncoderConfig()
	ec.EncodeTime = zapcore.RFC3339TimeEncoder
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(ec), zapcore.Lock(zapcore.AddSync(w)), zapcore.InfoLevel)
	return slog.New(zapslog.NewHandler(core, zapslog.WithCaller(true)))
}
