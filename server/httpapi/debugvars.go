package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"syscall"
)

// debugVars is upstream's /debug/vars: Go's expvar page as upstream's binary fills it (the
// command line, the runtime's memory statistics, the file descriptor limit and raft's status),
// in expvar's key order. Built from the member itself rather than from expvar's process-wide
// registry.
func debugVars(s RaftStatus) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		var fdLimit uint64
		var rl syscall.Rlimit
		if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil {
			fdLimit = rl.Cur
		}
		vars := []struct {
			key string
			val any
		}{
			{"cmdline", os.Args},
			{"file_descriptor_limit", fdLimit},
			{"memstats", ms},
			{"raft.status", s.RaftStatus()},
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		fmt.Fprint(w, "{\n")
		for i, v := range vars {
			b, err := json.Marshal(v.val)
			if err != nil {
				b = []byte("null")
			}
			if i > 0 {
				fmt.Fprint(w, ",\n")
			}
			fmt.Fprintf(w, "%q: %s", v.key, b)
		}
		fmt.Fprint(w, "\n}\n")
	})
}
