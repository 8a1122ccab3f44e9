package etcdserver

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fdCheckInterval is how often the member counts its file descriptors, as upstream: counting
// reads the whole descriptor table, too dear to do on every scrape of a member with many.
const fdCheckInterval = 10 * time.Minute

// fdGauges are upstream's os_fd_used and os_fd_limit.
type fdGauges struct{ used, limit prometheus.Gauge }

func newFDGauges(reg prometheus.Registerer) fdGauges {
	g := fdGauges{
		used:  prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "os", Subsystem: "fd", Name: "used", Help: "The number of used file descriptors."}),
		limit: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "os", Subsystem: "fd", Name: "limit", Help: "The file descriptor limit."}),
	}
	reg.MustRegister(g.used, g.limit)
	return g
}

// fdUsage is the number of open file descriptors of this process and its soft limit.
func fdUsage() (used, limit uint64, err error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, 0, fmt.Errorf("count open file descriptors: %w", err)
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, fmt.Errorf("read the file descriptor limit: %w", err)
	}
	return uint64(len(ents)), rl.Cur, nil
}

// monitorFDs sets the gauges at start and every fdCheckInterval, and warns, as upstream does,
// when four fifths of the limit are in use. Where descriptors cannot be counted it warns once
// and stops.
func (s *Server) monitorFDs() {
	t := time.NewTicker(fdCheckInterval)
	defer t.Stop()
	for {
		used, limit, err := fdUsage()
		if err != nil {
			s.log.Warn("failed to get file descriptor usage", "error", err)
			return
		}
		s.m.fds.used.Set(float64(used))
		s.m.fds.limit.Set(float64(limit))
		if used >= limit/5*4 {
			s.log.Warn("80% of file descriptors are used", "used", used, "limit", limit)
		}
		select {
		case <-t.C:
		case <-s.stopping:
			return
		}
	}
}
