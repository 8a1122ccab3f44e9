package v2http

import (
	"encoding/json"
	"net/http"
)

// StatsSource is the member's raft traffic figures, as upstream's stats endpoints show them.
type StatsSource interface {
	V2SelfStats() []byte
	// V2LeaderStats is nil when the member does not lead.
	V2LeaderStats() []byte
}

func (a *api) storeStats(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(a.s.V2StoreStats())
	w.Write(b)
}

func (a *api) selfStats(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(a.opt.Stats.V2SelfStats())
}

func (a *api) leaderStats(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	b := a.opt.Stats.V2LeaderStats()
	if b == nil {
		a.writeError(w, r, httpError{Message: "not current leader", status: http.StatusForbidden})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}
