package v3rpc

import (
	"context"
	"errors"
	"io"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/etcdserver"
	"etcdx/server/lease"
)

type leaseServer struct {
	pb.UnimplementedLeaseServer
	s   Leases
	hdr header
}

func (l *leaseServer) LeaseGrant(ctx context.Context, r *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error) {
	resp, err := l.s.LeaseGrant(ctx, r)
	if err != nil {
		return nil, togRPCError(err)
	}
	l.hdr.fill(resp.Header)
	return resp, nil
}

func (l *leaseServer) LeaseRevoke(ctx context.Context, r *pb.LeaseRevokeRequest) (*pb.LeaseRevokeResponse, error) {
	resp, err := l.s.LeaseRevoke(ctx, r)
	if err != nil {
		return nil, togRPCError(err)
	}
	l.hdr.fill(resp.Header)
	return resp, nil
}

func (l *leaseServer) LeaseTimeToLive(ctx context.Context, r *pb.LeaseTimeToLiveRequest) (*pb.LeaseTimeToLiveResponse, error) {
	resp, err := l.s.LeaseTimeToLive(ctx, r)
	if errors.Is(err, lease.ErrNotFound) {
		// Upstream answers an unknown lease with TTL -1 rather than an error.
		resp, err = &pb.LeaseTimeToLiveResponse{Header: &pb.ResponseHeader{}, ID: r.ID, TTL: -1}, nil
	}
	if err != nil {
		return nil, togRPCError(err)
	}
	l.hdr.fill(resp.Header)
	return resp, nil
}

func (l *leaseServer) LeaseLeases(ctx context.Context, r *pb.LeaseLeasesRequest) (*pb.LeaseLeasesResponse, error) {
	resp, err := l.s.LeaseLeases(ctx)
	if err != nil {
		return nil, togRPCError(err)
	}
	l.hdr.fill(resp.Header)
	return resp, nil
}

// LeaseKeepAlive renews leases for as long as the client streams requests, and ends with a
// retriable error when the member starts draining so the client reconnects elsewhere.
func (l *leaseServer) LeaseKeepAlive(stream pb.Lease_LeaseKeepAliveServer) error {
	type recv struct {
		req *pb.LeaseKeepAliveRequest
		err error
	}
	reqc := make(chan recv, 1)
	go func() {
		for {
			req, err := stream.Recv()
			select {
			case reqc <- recv{req, err}:
			case <-stream.Context().Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		var r recv
		select {
		case r = <-reqc:
		case <-l.s.Draining():
			return togRPCError(etcdserver.ErrStopped)
		case <-stream.Context().Done():
			return togRPCError(stream.Context().Err()) // e.g. no leader (requireLeader)
		}
		req, err := r.req, r.err
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		ttl, err := l.s.LeaseRenew(stream.Context(), req.ID)
		if errors.Is(err, lease.ErrNotFound) {
			err, ttl = nil, 0 // upstream: an unknown lease answers TTL 0
		}
		if err != nil {
			return togRPCError(err)
		}
		resp := &pb.LeaseKeepAliveResponse{Header: &pb.ResponseHeader{}, ID: req.ID, TTL: ttl}
		l.hdr.fill(resp.Header)
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}
