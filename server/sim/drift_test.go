package sim

import (
	"io"
	"log/slog"
	"strings"
	"testing"
)

// The membership check fails a run when a member logs that its v3 store drifted from its v2
// store: the handler keeps exactly those messages, with the member's name.
func TestDriftWatchKeepsDriftMessages(t *testing.T) {
	sink := &driftSink{}
	log := slog.New(&driftWatch{inner: slog.NewTextHandler(io.Discard, nil), sink: sink}).With("member", "m2")
	log.Info("restarted member")
	log.Warn("a warning of another kind")
	log.Warn("Removing zombie member from v3store", "member-id", "7a54")
	log.Warn("Syncing member in v3store")
	if len(sink.seen) != 2 || !strings.Contains(sink.seen[0], "Removing zombie member") || !strings.Contains(sink.seen[0], "member=m2") {
		t.Fatalf("kept %q", sink.seen)
	}
}
