package v2http

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/etcdserver"
	"etcdx/server/v2store"
)

// keys serves /v2/keys/<key>.
func (a *api) keys(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodHead, http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete) {
		return
	}
	a.clusterHeader(w)
	req, noValue, err := parseKeyRequest(r, time.Now())
	if err != nil {
		a.writeKeyError(w, r, err)
		return
	}
	if !a.keyAccess(r, r.URL.Path[len(keysPrefix):], req.Recursive) {
		v2store.NewError(v2store.EcodeUnauthorized, "Insufficient credentials", 0).WriteTo(w)
		return
	}
	ctx, cancel := a.timeout()
	defer cancel()
	resp, err := a.s.V2Do(ctx, req)
	if err != nil {
		a.writeKeyError(w, r, err)
		return
	}
	switch {
	case resp.Event != nil:
		writeEvent(w, resp, noValue)
	case resp.Watcher != nil:
		a.watch(w, r, resp, req.Stream)
	default:
		a.writeKeyError(w, r, errors.New("received response with no Event/Watcher"))
	}
}

// parseKeyRequest reads a keys request's parameters (query and form) as upstream does, into the
// v2 request for the key under the store's /1 namespace; noValue is noValueOnSuccess.
func parseKeyRequest(r *http.Request, now time.Time) (req pb.Request, noValue bool, err error) {
	bad := func(code int, cause string) (pb.Request, bool, error) {
		return pb.Request{}, false, v2store.NewError(code, cause, 0)
	}
	if err := r.ParseForm(); err != nil {
		return bad(v2store.EcodeInvalidForm, err.Error())
	}
	if !strings.HasPrefix(r.URL.Path, keysPrefix) {
		return bad(v2store.EcodeInvalidForm, "incorrect key prefix")
	}
	req = pb.Request{Method: r.Method, Path: path.Join(v2store.KeysPrefix, r.URL.Path[len(keysPrefix):])}
	f := r.Form
	if req.PrevIndex, err = formUint(f, "prevIndex"); err != nil {
		return bad(v2store.EcodeIndexNaN, `invalid value for "prevIndex"`)
	}
	if req.Since, err = formUint(f, "waitIndex"); err != nil {
		return bad(v2store.EcodeIndexNaN, `invalid value for "waitIndex"`)
	}
	for _, b := range []struct {
		name string
		dst  *bool
	}{{"recursive", &req.Recursive}, {"sorted", &req.Sorted}, {"wait", &req.Wait}, {"dir", &req.Dir},
		{"quorum", &req.Quorum}, {"stream", &req.Stream}} {
		if *b.dst, err = formBool(f, b.name); err != nil {
			return bad(v2store.EcodeInvalidField, fmt.Sprintf("invalid value for %q", b.name))
		}
	}
	if req.Wait && r.Method != http.MethodGet {
		return bad(v2store.EcodeInvalidField, `"wait" can only be used with GET requests`)
	}
	req.PrevValue = f.Get("prevValue")
	if _, ok := f["prevValue"]; ok && req.PrevValue == "" {
		return bad(v2store.EcodePrevValueReq, `"prevValue" cannot be empty`)
	}
	if noValue, err = formBool(f, "noValueOnSuccess"); err != nil {
		return bad(v2store.EcodeInvalidField, `invalid value for "noValueOnSuccess"`)
	}
	var ttl *uint64
	if f.Get("ttl") != "" {
		v, err := formUint(f, "ttl")
		if err != nil {
			return bad(v2store.EcodeTTLNaN, `invalid value for "ttl"`)
		}
		ttl = &v
	}
	if _, ok := f["prevExist"]; ok {
		v, err := formBool(f, "prevExist")
		if err != nil {
			return bad(v2store.EcodeInvalidField, "invalid value for prevExist")
		}
		req.PrevExist = &v
	}
	if _, ok := f["refresh"]; ok {
		v, err := formBool(f, "refresh")
		if err != nil {
			return bad(v2store.EcodeInvalidField, "invalid value for refresh")
		}
		req.Refresh = &v
		if v {
			if _, ok := f["value"]; ok && f.Get("value") != "" {
				return bad(v2store.EcodeRefreshValue, "A value was provided on a refresh")
			}
			if ttl == nil {
				return bad(v2store.EcodeRefreshTTLReq, "No TTL value set")
			}
		}
	}
	req.Val = f.Get("value")
	if ttl != nil {
		// The proposer's clock sets the expiry every member applies.
		req.Expiration = now.Add(time.Duration(*ttl) * time.Second).UnixNano()
	}
	return req, noValue, nil
}

// formUint and formBool read the first value of a parameter when it is there (zero when not).
func formUint(f url.Values, key string) (uint64, error) {
	if v, ok := f[key]; ok {
		return strconv.ParseUint(v[0], 10, 64)
	}
	return 0, nil
}

func formBool(f url.Values, key string) (bool, error) {
	if v, ok := f[key]; ok {
		return strconv.ParseBool(v[0])
	}
	return false, nil
}

// writeEvent answers a keys request with its event: the store and raft indexes in headers, 201
// when it created the node, keys shown without the /1 namespace.
func writeEvent(w http.ResponseWriter, resp etcdserver.V2Response, noValue bool) {
	ev := resp.Event
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Etcd-Index", fmt.Sprint(ev.EtcdIndex))
	w.Header().Set("X-Raft-Index", fmt.Sprint(resp.Index))
	w.Header().Set("X-Raft-Term", fmt.Sprint(resp.Term))
	if ev.IsCreated() {
		w.WriteHeader(http.StatusCreated)
	}
	ev = trimEvent(ev)
	if noValue {
		switch ev.Action {
		case v2store.ActionSet, v2store.ActionCompareAndSwap, v2store.ActionCreate, v2store.ActionUpdate:
			ev.Node, ev.PrevNode = nil, nil
		}
	}
	json.NewEncoder(w).Encode(ev)
}

// trimEvent is a copy of ev with its keys shown as the keys API names them. A refresh is not
// marked in answers (upstream's copy leaves the mark out).
func trimEvent(ev *v2store.Event) *v2store.Event {
	c := ev.Clone()
	c.Refresh = false
	trimNode(c.Node)
	trimNode(c.PrevNode)
	return c
}

func trimNode(n *v2store.Node) {
	if n == nil {
		return
	}
	n.Key = strings.TrimPrefix(n.Key, v2store.KeysPrefix)
	for _, c := range n.Nodes {
		trimNode(c)
	}
}

// writeKeyError answers a keys request that failed: a v2 store error with its cause shown
// without the namespace, anything else as upstream's 300 "Raft Internal Error" naming it.
func (a *api) writeKeyError(w http.ResponseWriter, r *http.Request, err error) {
	var se *v2store.Error
	if errors.As(err, &se) {
		c := *se
		c.Cause = strings.TrimPrefix(c.Cause, v2store.KeysPrefix)
		c.WriteTo(w)
		return
	}
	a.log.Warn("v2 response error", "remote-addr", r.RemoteAddr, "internal-server-error", err.Error())
	v2store.NewError(v2store.EcodeRaftInternal, err.Error(), 0).WriteTo(w)
}

// watch streams a watcher's events: one for a plain wait, every one for stream=true, until the
// client goes or the watcher is cleared.
func (a *api) watch(w http.ResponseWriter, r *http.Request, resp etcdserver.V2Response, stream bool) {
	wa := resp.Watcher
	defer wa.Remove()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Etcd-Index", fmt.Sprint(wa.StartIndex()))
	w.Header().Set("X-Raft-Index", fmt.Sprint(resp.Index))
	w.Header().Set("X-Raft-Term", fmt.Sprint(resp.Term))
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	flush() // a long poll gets its headers now
	enc := json.NewEncoder(w)
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-wa.EventChan():
			if !ok {
				return
			}
			if err := enc.Encode(trimEvent(ev)); err != nil {
				return
			}
			if !stream {
				return
			}
			flush()
		}
	}
}
