package v2http

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"etcdx/server/membership"
)

// member is a member as the v2 API shows it.
type member struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
}

func hexID(id uint64) string { return strconv.FormatUint(id, 16) }

func toMember(m membership.Member) member {
	return member{ID: hexID(m.ID), Name: m.Name, PeerURLs: append([]string{}, m.PeerURLs...),
		ClientURLs: append([]string{}, m.ClientURLs...)}
}

// members serves /v2/members: the list and the leader for anyone, adding, removing and updating
// members for root once auth is on.
func (a *api) members(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPut) {
		return
	}
	if r.Method != http.MethodGet && !a.rootAccess(r) {
		writeNoAuth(w)
		return
	}
	a.clusterHeader(w)
	ctx, cancel := a.timeout()
	defer cancel()
	rest := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, membersPrefix), "/")
	switch r.Method {
	case http.MethodGet:
		switch rest {
		case "":
			ms := a.s.Members()
			out := struct {
				Members []member `json:"members"`
			}{Members: make([]member, 0, len(ms))}
			for _, m := range ms {
				out.Members = append(out.Members, toMember(m))
			}
			writeJSON(w, http.StatusOK, out)
		case "leader":
			lead := a.s.Leader()
			if lead == 0 {
				a.writeError(w, r, httpError{Message: "During election", status: http.StatusServiceUnavailable})
				return
			}
			for _, m := range a.s.Members() {
				if m.ID == lead {
					writeJSON(w, http.StatusOK, toMember(m))
					return
				}
			}
			a.writeError(w, r, httpError{Message: "During election", status: http.StatusServiceUnavailable})
		default:
			a.writeError(w, r, httpError{Message: "Not found", status: http.StatusNotFound})
		}
	case http.MethodPost:
		urls, ok := a.peerURLsIn(w, r)
		if !ok {
			return
		}
		m, _, err := a.s.AddMember(ctx, urls, false)
		if err != nil {
			a.writeMemberError(w, r, err, 0)
			return
		}
		writeJSON(w, http.StatusCreated, toMember(*m))
	case http.MethodDelete:
		id, ok := a.memberID(w, r, rest)
		if !ok {
			return
		}
		if _, err := a.s.RemoveMember(ctx, id); err != nil {
			a.writeMemberError(w, r, err, id)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case http.MethodPut:
		id, ok := a.memberID(w, r, rest)
		if !ok {
			return
		}
		urls, ok := a.peerURLsIn(w, r)
		if !ok {
			return
		}
		if _, err := a.s.UpdateMember(ctx, id, urls); err != nil {
			a.writeMemberError(w, r, err, id)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// writeMemberError answers a membership change that failed, with upstream 3.5's v2 statuses and
// texts.
func (a *api) writeMemberError(w http.ResponseWriter, r *http.Request, err error, id uint64) {
	switch {
	case errors.Is(err, membership.ErrMemberExist):
		a.writeError(w, r, httpError{Message: "membership: ID exists", status: http.StatusConflict})
	case errors.Is(err, membership.ErrPeerURLExist):
		a.writeError(w, r, httpError{Message: "membership: peerURL exists", status: http.StatusConflict})
	case errors.Is(err, membership.ErrIDRemoved):
		a.writeError(w, r, httpError{Message: "Member permanently removed: " + hexID(id), status: http.StatusGone})
	case errors.Is(err, membership.ErrMemberNotFound):
		a.writeError(w, r, httpError{Message: "No such member: " + hexID(id), status: http.StatusNotFound})
	default:
		a.log.Warn("failed to change the membership", "member-id", hexID(id), "error", err)
		a.writeError(w, r, err)
	}
}

// memberID reads the member ID of /v2/members/<id>.
func (a *api) memberID(w http.ResponseWriter, r *http.Request, s string) (uint64, bool) {
	if s == "" {
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return 0, false
	}
	id, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		a.writeError(w, r, httpError{Message: "No such member: " + s, status: http.StatusNotFound})
		return 0, false
	}
	return id, true
}

// peerURLsIn reads {"peerURLs": [...]} from a JSON body: valid member URLs, sorted as upstream
// keeps them.
func (a *api) peerURLsIn(w http.ResponseWriter, r *http.Request) ([]string, bool) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/json" {
		a.writeError(w, r, httpError{Message: fmt.Sprintf("Bad Content-Type %s, accept application/json", ct), status: http.StatusUnsupportedMediaType})
		return nil, false
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		a.writeError(w, r, httpError{Message: err.Error(), status: http.StatusBadRequest})
		return nil, false
	}
	var in struct {
		PeerURLs []string `json:"peerURLs"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		a.writeError(w, r, httpError{Message: err.Error(), status: http.StatusBadRequest})
		return nil, false
	}
	urls := make([]string, 0, len(in.PeerURLs))
	for _, s := range in.PeerURLs {
		u, err := peerURL(s)
		if err != nil {
			a.writeError(w, r, httpError{Message: err.Error(), status: http.StatusBadRequest})
			return nil, false
		}
		urls = append(urls, u)
	}
	sort.Strings(urls)
	return urls, true
}

// machines serves /v2/machines: every member's client URLs, comma-separated.
func (a *api) machines(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	var urls []string
	for _, m := range a.s.Members() {
		urls = append(urls, m.ClientURLs...)
	}
	sort.Strings(urls)
	w.Write([]byte(strings.Join(urls, ", ")))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// peerURL checks a peer URL of a v2 members request, with upstream 3.5's texts.
func peerURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "http", "https", "unix", "unixs":
	default:
		return "", fmt.Errorf("URL scheme must be http, https, unix, or unixs: %s", s)
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return "", fmt.Errorf(`URL address does not have the form "host:port": %s`, s)
	}
	if u.Path != "" {
		return "", fmt.Errorf("URL must not contain a path: %s", s)
	}
	return u.String(), nil
}
