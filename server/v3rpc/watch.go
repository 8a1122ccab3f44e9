package v3rpc

import (
	"bytes"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"etcdx/server/etcdserver"
	"etcdx/server/failpoint"
	"etcdx/server/mvcc"
)

type watchServer struct {
	pb.UnimplementedWatchServer
	s                Watches
	hdr              header
	progressInterval time.Duration
	maxRequestBytes  int
	loop             *WatchLoopMetrics
}

// invalidWatchID is clientv3.InvalidWatchID: a creation that failed, or a stream-wide progress.
const invalidWatchID = -1

// watchOpts are what the send side needs to know about each watcher.
type watchOpts struct {
	prevKV   bool
	fragment bool
	progress bool
}

type watchStream struct {
	ws  *watchServer
	gs  pb.Watch_WatchServer
	mws *mvcc.WatchStream

	mu   sync.Mutex
	opts map[int64]watchOpts
	// sentSince records watchers that got events since the last progress tick: their next
	// progress notification is skipped, as upstream skips it (a progress notification itself
	// does not count).
	sentSince map[int64]bool

	ctrl    chan *pb.WatchResponse
	closec  chan struct{}
	errOnce sync.Once
	err     error
}

// Watch serves one client stream: a receive loop creates and cancels watchers, a send loop
// delivers their events in order.
func (w *watchServer) Watch(gs pb.Watch_WatchServer) error {
	sw := &watchStream{ws: w, gs: gs, mws: w.s.KV().NewWatchStream(), opts: map[int64]watchOpts{},
		sentSince: map[int64]bool{}, ctrl: make(chan *pb.WatchResponse, 64), closec: make(chan struct{})}
	defer sw.mws.Close()
	go func() {
		// A client that half-closes (the JSON gateway does, once the request body ends) still
		// receives events until it goes away.
		if err := sw.recvLoop(); err != io.EOF {
			sw.stop(err)
		}
	}()
	go func() {
		sw.stop(sw.sendLoop())
	}()
	select {
	case <-sw.closec:
	case <-gs.Context().Done():
		sw.stop(gs.Context().Err())
	case <-w.s.Stopping():
		sw.stop(etcdserver.ErrStopped)
	case <-w.s.Draining():
		sw.stop(etcdserver.ErrStopped)
	}
	if sw.err == io.EOF {
		return nil
	}
	return togRPCError(sw.err)
}

func (sw *watchStream) stop(err error) {
	sw.errOnce.Do(func() {
		sw.err = err
		close(sw.closec)
	})
}

func (sw *watchStream) hdr(rev int64) *pb.ResponseHeader {
	h := &pb.ResponseHeader{Revision: rev}
	sw.ws.hdr.fill(h)
	return h
}

func (sw *watchStream) sendCtrl(r *pb.WatchResponse) bool {
	select {
	case sw.ctrl <- r:
		return true
	case <-sw.closec:
		return false
	}
}

func (sw *watchStream) recvLoop() error {
	for {
		req, err := sw.gs.Recv()
		if err != nil {
			return err
		}
		switch {
		case req.GetCreateRequest() != nil:
			sw.create(req.GetCreateRequest())
		case req.GetCancelRequest() != nil:
			id := req.GetCancelRequest().WatchId
			if err := sw.mws.Cancel(id); err == nil {
				sw.mu.Lock()
				delete(sw.opts, id)
				sw.mu.Unlock()
				sw.sendCtrl(&pb.WatchResponse{Header: sw.hdr(0), WatchId: id, Canceled: true})
			}
		case req.GetProgressRequest() != nil:
			sw.mws.RequestProgressAll()
		}
	}
}

func (sw *watchStream) create(c *pb.WatchCreateRequest) {
	if c.StartRevision < 0 {
		// As upstream, before any other check: history before revision 0 is taken as compacted.
		sw.sendCtrl(&pb.WatchResponse{Header: sw.hdr(0), WatchId: invalidWatchID, Created: true, Canceled: true,
			CancelReason: rpctypes.ErrCompacted.Error()})
		return
	}
	key, end := c.Key, c.RangeEnd
	switch {
	case len(end) == 0:
		end = nil
	case len(end) == 1 && end[0] == 0:
		end = []byte{}
	}
	if err := sw.ws.s.WatchPermitted(sw.gs.Context(), c.Key, c.RangeEnd); err != nil {
		// As upstream: the status error's whole text is the cancel reason.
		sw.sendCtrl(&pb.WatchResponse{Header: sw.hdr(0), WatchId: invalidWatchID, Created: true, Canceled: true,
			CancelReason: togRPCError(err).Error()})
		return
	}
	if len(end) > 0 && bytes.Compare(key, end) >= 0 {
		sw.sendCtrl(&pb.WatchResponse{Header: sw.hdr(0), WatchId: invalidWatchID, Created: true, Canceled: true,
			CancelReason: "mvcc: watcher range is empty"})
		return
	}
	var filters []mvcc.EventFilter
	for _, f := range c.Filters {
		switch f {
		case pb.WatchCreateRequest_NOPUT:
			filters = append(filters, func(e mvcc.Event) bool { return e.Type == mvccpb.PUT })
		case pb.WatchCreateRequest_NODELETE:
			filters = append(filters, func(e mvcc.Event) bool { return e.Type == mvccpb.DELETE })
		}
	}
	// Register options before the watcher exists so its first events find them.
	sw.mu.Lock()
	id, err := sw.mws.Watch(c.WatchId, key, end, c.StartRevision, filters...)
	if err == nil {
		sw.opts[id] = watchOpts{prevKV: c.PrevKv, fragment: c.Fragment, progress: c.ProgressNotify}
	}
	sw.mu.Unlock()
	resp := &pb.WatchResponse{Header: sw.hdr(0), WatchId: id, Created: true}
	if err != nil {
		resp.WatchId, resp.Canceled, resp.CancelReason = invalidWatchID, true, err.Error()
	}
	sw.sendCtrl(resp)
}

func (sw *watchStream) sendLoop() error {
	created := map[int64]bool{}
	pending := map[int64][]mvcc.WatchResponse{}
	tick := time.NewTicker(progressInterval(sw.ws.progressInterval))
	defer tick.Stop()
	for {
		select {
		case r := <-sw.ctrl:
			start := time.Now()
			if err := sw.gs.Send(r); err != nil {
				return err
			}
			if r.Created && !r.Canceled {
				created[r.WatchId] = true
				for _, wr := range pending[r.WatchId] {
					if err := sw.sendEvents(wr); err != nil {
						return err
					}
				}
				delete(pending, r.WatchId)
			}
			if r.Canceled {
				delete(created, r.WatchId)
				delete(pending, r.WatchId)
			}
			sw.ws.loop.sentControl(start)
		case wr := <-sw.mws.Chan():
			if wr.WatchID != invalidWatchID && !created[wr.WatchID] {
				pending[wr.WatchID] = append(pending[wr.WatchID], wr)
				continue
			}
			start := time.Now()
			if err := sw.sendEvents(wr); err != nil {
				return err
			}
			sw.ws.loop.sentEvents(start, len(wr.Events))
		case <-tick.C:
			start := time.Now()
			sw.mu.Lock()
			for id, o := range sw.opts {
				if o.progress && !sw.sentSince[id] {
					go sw.mws.RequestProgress(id)
				}
			}
			clear(sw.sentSince)
			sw.mu.Unlock()
			sw.ws.loop.requestedProgress(start)
		case <-sw.closec:
			return nil
		}
	}
}

// progressInterval is a stream's progress period: the configured one (upstream's 10 minutes by
// default) plus up to a tenth of it at random, as upstream, so watchers created together do not
// all hear of progress at the same moment.
func progressInterval(configured time.Duration) time.Duration {
	if configured <= 0 {
		configured = 10 * time.Minute
	}
	return configured + time.Duration(rand.Int64N(int64(configured)/10+1))
}

func (sw *watchStream) sendEvents(wr mvcc.WatchResponse) error {
	failpoint.At(failpoint.BeforeSendWatchResponse)
	sw.mu.Lock()
	o := sw.opts[wr.WatchID]
	if len(wr.Events) > 0 {
		sw.sentSince[wr.WatchID] = true
	}
	if wr.CompactRevision != 0 {
		delete(sw.opts, wr.WatchID)
	}
	sw.mu.Unlock()
	evs := make([]*mvccpb.Event, len(wr.Events))
	for i := range wr.Events {
		e := &wr.Events[i]
		evs[i] = &mvccpb.Event{Type: e.Type, Kv: &e.KV}
		if o.prevKV && !(e.Type == mvccpb.PUT && e.KV.CreateRevision == e.KV.ModRevision) {
			if rr, err := sw.ws.s.KV().Range(e.KV.Key, nil, mvcc.RangeOptions{Rev: e.KV.ModRevision - 1}); err == nil && len(rr.KVs) > 0 {
				evs[i].PrevKv = &rr.KVs[0]
			}
		}
	}
	h := sw.hdr(wr.Revision)
	if wr.CompactRevision != 0 {
		// Cancelled by compaction: upstream's header carries no revision then.
		h = &pb.ResponseHeader{}
		sw.ws.hdr.fillExceptRevision(h)
	}
	resp := &pb.WatchResponse{Header: h, WatchId: wr.WatchID, Events: evs,
		CompactRevision: wr.CompactRevision, Canceled: wr.CompactRevision != 0}
	if !o.fragment || resp.Size() <= sw.ws.maxRequestBytes {
		return sw.gs.Send(resp)
	}
	// Split into messages under the request limit; every part but the last says Fragment.
	var part []*mvccpb.Event
	size := 0
	for i, ev := range evs {
		part = append(part, ev)
		size += ev.Size()
		if size >= sw.ws.maxRequestBytes || i == len(evs)-1 {
			r := &pb.WatchResponse{Header: resp.Header, WatchId: resp.WatchId, Events: part, Fragment: i != len(evs)-1}
			if err := sw.gs.Send(r); err != nil {
				return err
			}
			part, size = nil, 0
		}
	}
	return nil
}
