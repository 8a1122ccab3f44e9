package recipes

import (
	"context"
	"errors"

	"go.etcd.io/etcd/client/v3/concurrency"
	epb "go.etcd.io/etcd/server/v3/etcdserver/api/v3election/v3electionpb"
)

// errNoLeaderKey is upstream's answer to a Proclaim or Resign without the leader key.
var errNoLeaderKey = errors.New(`"leader" field must be provided`)

type electionServer struct{ s *Services }

// Campaign waits until the caller leads election name, then answers with its leader key.
func (e electionServer) Campaign(ctx context.Context, r *epb.CampaignRequest) (*epb.CampaignResponse, error) {
	ctx = e.s.asCaller(ctx)
	sess, err := e.s.session(ctx, r.Lease)
	if err != nil {
		return nil, err
	}
	el := concurrency.NewElection(sess, string(r.Name))
	if err := el.Campaign(ctx, string(r.Value)); err != nil {
		return nil, err
	}
	return &epb.CampaignResponse{Header: el.Header(),
		Leader: &epb.LeaderKey{Name: r.Name, Key: []byte(el.Key()), Rev: el.Rev(), Lease: int64(sess.Lease())}}, nil
}

// resumed is the election the leader key names, for its leader to act on.
func (e electionServer) resumed(ctx context.Context, l *epb.LeaderKey) (*concurrency.Election, error) {
	if l == nil {
		return nil, errNoLeaderKey
	}
	sess, err := e.s.session(ctx, l.Lease)
	if err != nil {
		return nil, err
	}
	return concurrency.ResumeElection(sess, string(l.Name), string(l.Key), l.Rev), nil
}

// Proclaim sets a new value without another election, by the leader only.
func (e electionServer) Proclaim(ctx context.Context, r *epb.ProclaimRequest) (*epb.ProclaimResponse, error) {
	ctx = e.s.asCaller(ctx)
	el, err := e.resumed(ctx, r.Leader)
	if err != nil {
		return nil, err
	}
	if err := el.Proclaim(ctx, string(r.Value)); err != nil {
		return nil, err
	}
	return &epb.ProclaimResponse{Header: el.Header()}, nil
}

// Resign gives up leadership, so the next campaigner leads.
func (e electionServer) Resign(ctx context.Context, r *epb.ResignRequest) (*epb.ResignResponse, error) {
	ctx = e.s.asCaller(ctx)
	el, err := e.resumed(ctx, r.Leader)
	if err != nil {
		return nil, err
	}
	if err := el.Resign(ctx); err != nil {
		return nil, err
	}
	return &epb.ResignResponse{Header: el.Header()}, nil
}

// Leader answers with the current leader's proclamation (election: no leader, when there is none).
func (e electionServer) Leader(ctx context.Context, r *epb.LeaderRequest) (*epb.LeaderResponse, error) {
	ctx = e.s.asCaller(ctx)
	sess, err := e.s.session(ctx, -1)
	if err != nil {
		return nil, err
	}
	l, err := concurrency.NewElection(sess, string(r.Name)).Leader(ctx)
	if err != nil {
		return nil, err
	}
	return &epb.LeaderResponse{Header: l.Header, Kv: l.Kvs[0]}, nil
}

// Observe streams every proclamation of the election's leaders until the caller goes.
func (e electionServer) Observe(r *epb.LeaderRequest, stream epb.Election_ObserveServer) error {
	ctx := e.s.asCaller(stream.Context())
	sess, err := e.s.session(ctx, -1)
	if err != nil {
		return err
	}
	ch := concurrency.NewElection(sess, string(r.Name)).Observe(ctx)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case resp, ok := <-ch:
			if !ok {
				return nil
			}
			if err := stream.Send(&epb.LeaderResponse{Header: resp.Header, Kv: resp.Kvs[0]}); err != nil {
				return err
			}
		}
	}
}
