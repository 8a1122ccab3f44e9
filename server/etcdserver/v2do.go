package etcdserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/v2store"
)

// The v2 API of a 3.5 member (--enable-v2) reads its own v2 store and sends every write, and a
// quorum read, through raft as the bare v2 request upstream 3.5 proposes, so members of ours and
// upstream's apply the same entries in the same order.

var (
	// ErrNoV2Store answers a v2 request on a member that keeps no v2 store (level 3.6 and later).
	ErrNoV2Store = errors.New("etcdserver: this member keeps no v2 store (the v2 API is gone from etcd 3.6)")
	// ErrUnknownMethod is upstream's answer to a v2 request with a method it does not know.
	ErrUnknownMethod = errors.New("etcdserver: unknown method")
)

// V2Response is the answer to a v2 request: an event, or a watcher for wait=true.
type V2Response struct {
	Event   *v2store.Event
	Watcher *v2store.Watcher
	// Index and Term are the committed raft index and the term when the request was answered
	// (upstream's X-Raft-Index and X-Raft-Term).
	Index, Term uint64
}

// V2Do serves a v2 request whose path includes the store's namespace (/1 for the keys API, /2
// for v2 auth): a GET or HEAD from the local store (a watcher for wait=true), anything else, and
// a GET with quorum=true, through raft.
func (s *Server) V2Do(ctx context.Context, r pb.Request) (V2Response, error) {
	if s.v2 == nil {
		return V2Response{}, ErrNoV2Store
	}
	if r.Method == http.MethodGet && r.Quorum {
		r.Method = "QGET"
	}
	var resp V2Response
	var err error
	switch r.Method {
	case http.MethodGet:
		if r.Wait {
			resp.Watcher, err = s.v2.Watch(r.Path, r.Recursive, r.Stream, r.Since)
		} else {
			resp.Event, err = s.v2.Get(r.Path, r.Recursive, r.Sorted)
		}
	case http.MethodHead:
		resp.Event, err = s.v2.Get(r.Path, r.Recursive, r.Sorted)
	case http.MethodPost, http.MethodPut, http.MethodDelete, "QGET":
		resp.Event, err = s.proposeV2(ctx, &r)
	default:
		err = ErrUnknownMethod
	}
	resp.Term, resp.Index = s.Term(), s.CommittedIndex()
	return resp, err
}

// proposeV2 sends r through raft and returns the event every member's v2 store produced.
func (s *Server) proposeV2(ctx context.Context, r *pb.Request) (*v2store.Event, error) {
	r.ID = s.reqIDs.next()
	data, err := r.Marshal()
	if err != nil {
		return nil, fmt.Errorf("encode v2 request: %w", err)
	}
	res, err := s.proposeAndWait(ctx, r.ID, data)
	if err != nil {
		return nil, err
	}
	if res.err != nil {
		return nil, res.err
	}
	v, ok := res.resp.(*v2Result)
	if !ok || v.Event == nil {
		return nil, fmt.Errorf("v2 request %s %s: the applier returned no event", r.Method, r.Path)
	}
	return v.Event, nil
}

// V2StoreStats are the v2 store's operation counters (GET /v2/stats/store).
func (s *Server) V2StoreStats() v2store.Stats {
	if s.v2 == nil {
		return v2store.Stats{}
	}
	return s.v2.Stats()
}
