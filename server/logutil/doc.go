// Package logutil builds the member's logger from upstream's logging flags (--logger,
// --log-outputs, --log-format, --log-level, --enable-log-rotation, --log-rotation-config-json).
// Lines are zap's, encoded as upstream encodes them (level, ts, caller, msg, then fields), so
// log pipelines and alert rules written for upstream etcd read ours unchanged. The rest of the
// server logs through log/slog; the handler here hands every record to zap.
//
// The files:
//
//	logutil.go the member's logger from upstream's logging flags
//	fatal.go   upstream's fatal level
//	journal.go --log-outputs=systemd/journal
//	tool.go    ToolLogger: the offline tool's console log
package logutil
