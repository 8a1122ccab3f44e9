package v3rpc

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"time"

	"github.com/dustin/go-humanize"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"etcdx/server/membership"
	"etcdx/server/version"
)

type maintenanceServer struct {
	pb.UnimplementedMaintenanceServer
	s      Maintenance
	log    *slog.Logger
	hdr    header
	health *grpcHealth
}

func (m *maintenanceServer) Alarm(ctx context.Context, r *pb.AlarmRequest) (*pb.AlarmResponse, error) {
	resp, err := m.s.Alarm(ctx, r)
	if err != nil {
		return nil, togRPCError(err)
	}
	m.hdr.fill(resp.Header)
	return resp, nil
}

func (m *maintenanceServer) Status(ctx context.Context, r *pb.StatusRequest) (*pb.StatusResponse, error) {
	s := m.s
	resp := &pb.StatusResponse{
		Header:           &pb.ResponseHeader{},
		Version:          s.Version(),
		DbSize:           s.Backend().Size(),
		DbSizeInUse:      s.Backend().SizeInUse(),
		Leader:           s.Leader(),
		RaftIndex:        s.CommittedIndex(),
		RaftTerm:         s.Term(),
		RaftAppliedIndex: s.AppliedIndex(),
		IsLearner:        s.IsLearner(),
	}
	if version.StatusQuota.Built(s.Level()) {
		resp.DbSizeQuota = s.Config().QuotaBackendBytes
	}
	if st := s.StorageVersion(); !st.IsZero() {
		resp.StorageVersion = st.Full()
	}
	if version.Downgrade.Built(s.Level()) {
		dg := s.DowngradeInfo()
		resp.DowngradeInfo = &pb.DowngradeInfo{Enabled: dg.Enabled, TargetVersion: dg.TargetVersion}
	}
	for _, a := range s.Alarms() {
		resp.Errors = append(resp.Errors, fmt.Sprintf("memberID:%d alarm:%s ", a.MemberID, a.Alarm.String()))
	}
	if resp.Leader == 0 {
		resp.Errors = append(resp.Errors, "etcdserver: no leader")
	}
	m.hdr.fill(resp.Header)
	return resp, nil
}

// Downgrade validates, enables or cancels a downgrade of the cluster by one minor version.
func (m *maintenanceServer) Downgrade(ctx context.Context, r *pb.DowngradeRequest) (*pb.DowngradeResponse, error) {
	resp, err := m.s.Downgrade(ctx, r)
	if err != nil {
		return nil, togRPCError(err)
	}
	resp.Header = &pb.ResponseHeader{}
	m.hdr.fill(resp.Header)
	return resp, nil
}

func (m *maintenanceServer) Defragment(ctx context.Context, r *pb.DefragmentRequest) (*pb.DefragmentResponse, error) {
	m.health.defragStarted()
	defer m.health.defragFinished()
	if err := m.s.Backend().Defrag(); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	// No header, as upstream: the gateway's answer is {}.
	return &pb.DefragmentResponse{}, nil
}

func (m *maintenanceServer) Hash(ctx context.Context, r *pb.HashRequest) (*pb.HashResponse, error) {
	h, err := m.s.Backend().Hash()
	if err != nil {
		return nil, togRPCError(err)
	}
	resp := &pb.HashResponse{Header: &pb.ResponseHeader{}, Hash: h}
	m.hdr.fill(resp.Header)
	return resp, nil
}

func (m *maintenanceServer) HashKV(ctx context.Context, r *pb.HashKVRequest) (*pb.HashKVResponse, error) {
	h, hashRev, rev, compactRev, err := m.s.KV().HashKV(r.Revision)
	if err != nil {
		return nil, togRPCError(err)
	}
	resp := &pb.HashKVResponse{Header: &pb.ResponseHeader{Revision: rev}, Hash: h, CompactRevision: compactRev, HashRevision: hashRev}
	m.hdr.fill(resp.Header)
	return resp, nil
}

// Snapshot streams the bbolt file followed by its SHA-256, which restore tools verify, as
// upstream's: RemainingBytes counts the file still to come (0 with the checksum), and from 3.6
// every message carries the storage version, which etcdctl prints as the server version.
func (m *maintenanceServer) Snapshot(r *pb.SnapshotRequest, srv pb.Maintenance_SnapshotServer) error {
	be := m.s.Backend()
	storageVersion := ""
	if st := m.s.StorageVersion(); !st.IsZero() {
		storageVersion = st.Full() // zero below 3.6 (Server.StorageVersion), so no version there
	}
	// The size is the snapshot transaction's own, so RemainingBytes counts down to 0 exactly.
	pr, total, err := be.ReadSnapshot()
	if err != nil {
		return togRPCError(err)
	}
	defer pr.Close()
	lg := m.log
	size := humanize.Bytes(uint64(total))
	start := time.Now()
	lg.Info("sending database snapshot to client", m.withStorageVersion(storageVersion, "total-bytes", total, "size", size)...)
	h := sha256.New()
	const chunk = 32 * 1024
	sent := int64(0)
	for {
		buf := make([]byte, chunk) // Send may still hold the previous one
		n, err := io.ReadFull(pr, buf)
		if n > 0 {
			sent += int64(n)
			h.Write(buf[:n])
			resp := &pb.SnapshotResponse{RemainingBytes: uint64(max(total-sent, 0)), Blob: buf[:n], Version: storageVersion}
			if serr := srv.Send(resp); serr != nil {
				return serr
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return status.Error(codes.Internal, fmt.Sprintf("snapshot: %v", err))
		}
	}
	sum := h.Sum(nil)
	lg.Info("sending database sha256 checksum to client", "total-bytes", total, "checksum-size", len(sum))
	if err := srv.Send(&pb.SnapshotResponse{RemainingBytes: 0, Blob: sum, Version: storageVersion}); err != nil {
		return err
	}
	lg.Info("successfully sent database snapshot to client",
		m.withStorageVersion(storageVersion, "total-bytes", total, "size", size, "took", time.Since(start))...)
	return nil
}

// withStorageVersion adds the storage version to a snapshot log event from 3.6, as upstream's.
func (m *maintenanceServer) withStorageVersion(storageVersion string, kv ...any) []any {
	if version.StorageVersion.Built(m.s.Level()) {
		kv = append(kv, "storage-version", storageVersion)
	}
	return kv
}

func (m *maintenanceServer) MoveLeader(ctx context.Context, r *pb.MoveLeaderRequest) (*pb.MoveLeaderResponse, error) {
	if err := m.s.MoveLeader(ctx, r.TargetID); err != nil {
		return nil, togRPCError(err)
	}
	resp := &pb.MoveLeaderResponse{Header: &pb.ResponseHeader{}}
	m.hdr.fill(resp.Header)
	return resp, nil
}

type clusterServer struct {
	pb.UnimplementedClusterServer
	s   Cluster
	hdr header
}

func (c *clusterServer) MemberList(ctx context.Context, r *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	if r.Linearizable {
		if err := c.s.LinearizableReadNotify(ctx); err != nil {
			return nil, togRPCError(err)
		}
	}
	resp := &pb.MemberListResponse{Header: &pb.ResponseHeader{}}
	resp.Members = toPBMembers(c.s.Members())
	c.hdr.fillExceptRevision(resp.Header)
	return resp, nil
}

func toPBMembers(ms []membership.Member) []*pb.Member {
	out := make([]*pb.Member, 0, len(ms))
	for _, m := range ms {
		out = append(out, &pb.Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner})
	}
	return out
}

// checkPeerURLs takes the peer URLs upstream's member calls take: http, https, unix or unixs,
// host:port, no path.
func checkPeerURLs(urls []string) error {
	if len(urls) == 0 {
		return rpctypes.ErrGRPCMemberBadURLs
	}
	for _, u := range urls {
		pu, err := url.Parse(u)
		if err != nil {
			return rpctypes.ErrGRPCMemberBadURLs
		}
		switch pu.Scheme {
		case "http", "https", "unix", "unixs":
		default:
			return rpctypes.ErrGRPCMemberBadURLs
		}
		if _, _, err := net.SplitHostPort(pu.Host); err != nil || pu.Path != "" {
			return rpctypes.ErrGRPCMemberBadURLs
		}
	}
	return nil
}

func (c *clusterServer) MemberAdd(ctx context.Context, r *pb.MemberAddRequest) (*pb.MemberAddResponse, error) {
	if err := checkPeerURLs(r.PeerURLs); err != nil {
		return nil, err
	}
	m, ms, err := c.s.AddMember(ctx, r.PeerURLs, r.IsLearner)
	if err != nil {
		return nil, togRPCError(err)
	}
	resp := &pb.MemberAddResponse{Header: &pb.ResponseHeader{}, Members: toPBMembers(ms),
		Member: &pb.Member{ID: m.ID, PeerURLs: m.PeerURLs, IsLearner: m.IsLearner}}
	c.hdr.fillExceptRevision(resp.Header)
	return resp, nil
}

func (c *clusterServer) MemberRemove(ctx context.Context, r *pb.MemberRemoveRequest) (*pb.MemberRemoveResponse, error) {
	ms, err := c.s.RemoveMember(ctx, r.ID)
	if err != nil {
		return nil, togRPCError(err)
	}
	resp := &pb.MemberRemoveResponse{Header: &pb.ResponseHeader{}, Members: toPBMembers(ms)}
	c.hdr.fillExceptRevision(resp.Header)
	return resp, nil
}

func (c *clusterServer) MemberUpdate(ctx context.Context, r *pb.MemberUpdateRequest) (*pb.MemberUpdateResponse, error) {
	if err := checkPeerURLs(r.PeerURLs); err != nil {
		return nil, err
	}
	ms, err := c.s.UpdateMember(ctx, r.ID, r.PeerURLs)
	if err != nil {
		return nil, togRPCError(err)
	}
	resp := &pb.MemberUpdateResponse{Header: &pb.ResponseHeader{}, Members: toPBMembers(ms)}
	c.hdr.fillExceptRevision(resp.Header)
	return resp, nil
}

func (c *clusterServer) MemberPromote(ctx context.Context, r *pb.MemberPromoteRequest) (*pb.MemberPromoteResponse, error) {
	ms, err := c.s.PromoteMember(ctx, r.ID)
	if err != nil {
		return nil, togRPCError(err)
	}
	resp := &pb.MemberPromoteResponse{Header: &pb.ResponseHeader{}, Members: toPBMembers(ms)}
	c.hdr.fillExceptRevision(resp.Header)
	return resp, nil
}
