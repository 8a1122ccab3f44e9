package etcdserver

import (
	"bytes"
	"context"
	"math"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/apply"
	"etcdx/server/auth"
	"etcdx/server/failpoint"
	"etcdx/server/rangewire"
)

// firstChunkKeys is how many keys the first chunk of a RangeStream holds, as upstream's.
const firstChunkKeys = 10

// RangeStream serves r in chunks through send, as upstream 3.7's KV.RangeStream. Every chunk is
// read at the revision the first one saw, from a read view of its own that is closed before the
// chunk is sent: writes never wait for the client to take a chunk, and memory is bounded by a
// chunk, not by the result. The last chunk carries the header, More and the Count that Range
// answers for the same request; the others carry keys only.
func (s *Server) RangeStream(ctx context.Context, r *pb.RangeRequest, send func(*rangewire.Response) error) error {
	if !r.Serializable {
		if err := s.LinearizableReadNotify(ctx); err != nil {
			return err
		}
	}
	req := *r // the chunks move its key, limit and revision
	return s.checkedRead(ctx, func(in *auth.Info) error { return s.auth.IsRangePermitted(in, r.Key, r.RangeEnd) }, func() error {
		return s.rangeChunks(ctx, &req, send)
	})
}

func (s *Server) rangeChunks(ctx context.Context, req *pb.RangeRequest, send func(*rangewire.Response) error) error {
	if req.CountOnly {
		resp, err := s.readRange(req)
		if err != nil {
			return err
		}
		out := rangewire.NewResponse(nil, 0)
		out.Header, out.Count = &pb.ResponseHeader{Revision: resp.Header.Revision}, resp.Count
		return send(out)
	}
	total := req.Limit
	if total == 0 {
		total = math.MaxInt64
	}
	req.Limit = min(firstChunkKeys, total)
	start := req.Key
	var headerRev, sent int64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		failpoint.At(failpoint.BeforeRangeStreamChunk)
		resp, err := s.readEncoded(req)
		if err != nil {
			return err
		}
		if headerRev == 0 {
			// The header names the store's revision when the stream began; a request without a
			// revision reads every chunk there, so later writes never show up half-way.
			headerRev = resp.Header.Revision
			if req.Revision == 0 {
				req.Revision = headerRev
			}
		}
		sent += int64(resp.Kvs)
		var next []byte
		if resp.More {
			next = append(bytes.Clone(resp.LastKey), 0)
		}
		// Only the last chunk has a header, More and Count.
		more, chunkBytes := resp.More, resp.KVsSize()
		resp.Header, resp.More, resp.Count = nil, false, 0
		done := !more || sent == total
		if done {
			resp.Header, resp.More, resp.Count = &pb.ResponseHeader{Revision: headerRev}, more, sent
			if more {
				count, err := s.streamCount(start, next, req, sent)
				if err != nil {
					return err
				}
				resp.Count = count
			}
		}
		if err := send(resp); err != nil {
			return err
		}
		if done {
			return nil
		}
		req.Key = next
		req.Limit = min(nextChunkKeys(req.Limit, chunkBytes, int(s.cfg.MaxRequestBytes)), total-sent)
	}
}

// readEncoded answers one chunk, encoded, from a read view of its own.
func (s *Server) readEncoded(r *pb.RangeRequest) (*rangewire.Response, error) {
	v := s.kv.Read()
	defer v.End()
	return s.encodeRange(v, r, true)
}

// streamCount is the Count of a stream that sent its first sent keys from start on and would go
// on at next: a plain range (neither sorted nor filtered, so the keys sent are the first live
// keys) counts through the store's page counts, which carry the count from one page of a
// paginated list to the next (kube-apiserver reads each page of 10,000 as a stream); the others
// count the keys left.
func (s *Server) streamCount(start, next []byte, req *pb.RangeRequest, sent int64) (int64, error) {
	if apply.Sorted(req) || apply.Filtered(req) {
		rest, err := s.readRange(&pb.RangeRequest{Key: next, RangeEnd: req.RangeEnd, Revision: req.Revision, CountOnly: true})
		if err != nil {
			return 0, err
		}
		return sent + rest.Count, nil
	}
	v := s.kv.Read()
	defer v.End()
	n, err := v.PageCount(start, next, apply.GteRange(req.RangeEnd), req.Revision, int(sent))
	return int64(n), err
}

// readRange answers one range from a read view of its own.
func (s *Server) readRange(r *pb.RangeRequest) (*pb.RangeResponse, error) {
	v := s.kv.Read()
	defer v.End()
	return apply.Range(v, r)
}

// nextChunkKeys sizes the next chunk from the last one so that chunks land near target bytes
// (the request size limit): it doubles below half the target and halves above twice it, and
// stays put in between so chunks near the target do not swing. Never 0, which means no limit.
func nextChunkKeys(last int64, lastBytes, target int) int64 {
	switch {
	case lastBytes < target/2:
		last *= 2
	case lastBytes > target*2:
		last /= 2
	}
	return max(last, 1)
}
