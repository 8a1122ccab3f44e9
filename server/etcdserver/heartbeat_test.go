package etcdserver

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.etcd.io/raft/v3/raftpb"
)

// A late heartbeat counts as a send failure; one sent after a change of role or leader (reset)
// does not, whatever gap there was since this member last led.
func TestHeartbeatDetectorForgetsEarlierTerms(t *testing.T) {
	s := &Server{cfg: Config{TickMs: 1}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s.m = &metrics{heartbeatSendFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_server_heartbeat_send_failures_total"})}
	beat := []raftpb.Message{{Type: raftpb.MsgHeartbeat, To: 2}, {Type: raftpb.MsgApp, To: 3}}
	var d heartbeatDetector
	steps := []struct {
		name  string
		reset bool
		want  float64 // failures counted so far
	}{
		{"first heartbeat to a peer", false, 0},
		{"late heartbeat (gap over two intervals)", false, 1},
		{"after a change of leader", true, 1},
		{"late again in the same term", false, 2},
	}
	for _, st := range steps {
		if st.reset {
			d.reset()
		}
		d.observe(beat, s)
		if got := testutil.ToFloat64(s.m.heartbeatSendFailures); got != st.want {
			t.Fatalf("%s: %v failures counted, want %v", st.name, got, st.want)
		}
		time.Sleep(10 * time.Millisecond) // five heartbeat intervals of 2 ms pass between steps
	}
}
