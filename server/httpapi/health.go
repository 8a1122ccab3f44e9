package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// addHealth adds /health, /livez and /readyz (and each probe check on its own path, as
// /readyz/data_corruption), answered as upstream answers them. With the v2 API (3.5's
// --enable-v2), /health reads through the v2 API as upstream's does then.
func addHealth(mux *http.ServeMux, s Health, v2 bool) {
	mux.Handle("/health", HealthHandler(s, v2))
	read := func(serializable bool) func(context.Context) error {
		return func(ctx context.Context) error { return readOne(ctx, s, serializable) }
	}
	for _, p := range []probe{
		{kind: "livez", checks: []probeCheck{{"serializable_read", read(true)}}},
		{kind: "readyz", checks: []probeCheck{
			{"data_corruption", func(context.Context) error {
				for _, a := range s.Alarms() {
					if a.Alarm == pb.AlarmType_CORRUPT {
						return fmt.Errorf("alarm activated: %s", a.Alarm)
					}
				}
				return nil
			}},
			{"serializable_read", read(true)},
			{"linearizable_read", read(false)},
			{"non_learner", func(context.Context) error {
				if s.IsLearner() {
					return fmt.Errorf("not supported for learner")
				}
				return nil
			}},
		}},
	} {
		p.s = s
		mux.Handle("/"+p.kind, p.handler(p.checks))
		for _, c := range p.checks {
			mux.Handle("/"+p.kind+"/"+c.name, p.handler([]probeCheck{c}))
		}
	}
}

// health is the /health body.
type health struct {
	Health string `json:"health"`
	Reason string `json:"reason"`
}

// HealthHandler answers /health as upstream: the first active alarm not excluded (?exclude=NOSPACE),
// a leader (unless ?serializable=true), then a read; only GET. With v2, the read is upstream
// 3.5's v2 health read: a quorum GET through raft (an entry in the log), within a second.
func HealthHandler(s Health, v2 bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowOnly(w, r, http.MethodGet) {
			return
		}
		serializable := r.URL.Query().Get("serializable") == "true"
		h := checkHealth(r.Context(), s, excludedSet(r), serializable, v2)
		s.ObserveHealth(h.Health == "true")
		d, _ := json.Marshal(h)
		if h.Health != "true" {
			s.Config().Logger.Warn("/health error", "output", string(d), "status-code", http.StatusServiceUnavailable)
			http.Error(w, string(d), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
		w.Write(d) // no trailing newline, as upstream
	})
}

func checkHealth(ctx context.Context, s Health, excluded map[string]bool, serializable, v2 bool) health {
	for _, a := range s.Alarms() {
		if excluded[a.Alarm.String()] {
			continue
		}
		switch a.Alarm {
		case pb.AlarmType_NOSPACE:
			return health{"false", "ALARM NOSPACE"}
		case pb.AlarmType_CORRUPT:
			return health{"false", "ALARM CORRUPT"}
		default:
			return health{"false", "ALARM UNKNOWN"}
		}
	}
	if !serializable && s.Leader() == 0 {
		return health{"false", "RAFT NO LEADER"}
	}
	if v2 {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, err := s.V2Do(ctx, pb.Request{Method: "QGET"}); err != nil {
			s.Config().Logger.Warn("serving /health false; QGET fails", "error", err)
			return health{"false", "QGET ERROR:" + err.Error()}
		}
		return health{Health: "true"}
	}
	ctx, cancel := context.WithTimeout(ctx, s.RequestTimeout())
	defer cancel()
	if err := readOne(ctx, s, serializable); err != nil {
		return health{"false", "RANGE ERROR:" + err.Error()}
	}
	return health{Health: "true"}
}

// readOne is the read every health check makes: one key, as root (auth must not fail a probe).
func readOne(ctx context.Context, s Health, serializable bool) error {
	_, err := s.Range(s.AsRoot(ctx), &pb.RangeRequest{KeysOnly: true, Limit: 1, Serializable: serializable})
	return err
}

// excludedSet is the ?exclude= values (repeatable).
func excludedSet(r *http.Request) map[string]bool {
	set := map[string]bool{}
	for _, v := range r.URL.Query()["exclude"] {
		if v != "" {
			set[v] = true
		}
	}
	return set
}

// probe is /livez or /readyz: named checks, each "[+]name ok" or "[-]name failed: reason".
type probe struct {
	s      Health
	kind   string
	checks []probeCheck
}

type probeCheck struct {
	name string
	run  func(context.Context) error
}

// handler runs checks (less those the request excludes, on the root path), as upstream: "ok"
// (with ?verbose each check's line first), or 503 with each check's line.
func (p probe) handler(checks []probeCheck) http.Handler {
	root := len(checks) == len(p.checks)
	path := "/" + p.kind
	if !root {
		path += "/" + checks[0].name
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowOnly(w, r, http.MethodGet) {
			return
		}
		excluded := map[string]bool{}
		if root {
			excluded = excludedSet(r)
		}
		var b strings.Builder
		failed := false
		for _, c := range checks {
			if excluded[c.name] {
				delete(excluded, c.name)
				continue
			}
			err := c.run(r.Context())
			p.s.ObserveHealthCheck(p.kind, c.name, err == nil)
			if err != nil {
				failed = true
				fmt.Fprintf(&b, "[-]%s failed: %v\n", c.name, err)
			} else {
				fmt.Fprintf(&b, "[+]%s ok\n", c.name)
			}
		}
		if len(excluded) > 0 {
			p.s.Config().Logger.Warn("some health checks cannot be excluded", "missing-health-checks", excludedNames(excluded))
		}
		if failed {
			p.s.Config().Logger.Error("Health check error", "path", path, "reason", b.String(), "status-code", http.StatusServiceUnavailable)
			http.Error(w, b.String(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if _, verbose := r.URL.Query()["verbose"]; verbose {
			fmt.Fprint(w, b.String())
		}
		fmt.Fprint(w, "ok\n")
	})
}

func excludedNames(set map[string]bool) string {
	var q []string
	for n := range set {
		q = append(q, fmt.Sprintf("%q", n))
	}
	return strings.Join(q, ",")
}
