package etcdserver

import (
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// observeRequest records one request in etcd_server_request_duration_seconds (upstream 3.7's;
// the histogram is nil below 3.7): kind is upstream's type label, success whether err is nil.
func (m *metrics) observeRequest(kind string, start time.Time, err error) {
	if m == nil || m.requestDuration == nil {
		return
	}
	m.requestDuration.with(outcome{kind, err == nil}).Observe(time.Since(start).Seconds())
}

// requestType is upstream's type label of a replicated request: the name of its one field.
func requestType(r *pb.InternalRaftRequest) string {
	switch {
	case r.Range != nil:
		return "Range"
	case r.Put != nil:
		return "Put"
	case r.DeleteRange != nil:
		return "DeleteRange"
	case r.Txn != nil:
		return "Txn"
	case r.Compaction != nil:
		return "Compaction"
	case r.LeaseGrant != nil:
		return "LeaseGrant"
	case r.LeaseRevoke != nil:
		return "LeaseRevoke"
	case r.LeaseCheckpoint != nil:
		return "LeaseCheckpoint"
	case r.Alarm != nil:
		return "Alarm"
	case r.Authenticate != nil:
		return "Authenticate"
	case r.AuthEnable != nil:
		return "AuthEnable"
	case r.AuthDisable != nil:
		return "AuthDisable"
	case r.AuthStatus != nil:
		return "AuthStatus"
	case r.AuthUserAdd != nil:
		return "AuthUserAdd"
	case r.AuthUserDelete != nil:
		return "AuthUserDelete"
	case r.AuthUserChangePassword != nil:
		return "AuthUserChangePassword"
	case r.AuthUserGrantRole != nil:
		return "AuthUserGrantRole"
	case r.AuthUserGet != nil:
		return "AuthUserGet"
	case r.AuthUserRevokeRole != nil:
		return "AuthUserRevokeRole"
	case r.AuthRoleAdd != nil:
		return "AuthRoleAdd"
	case r.AuthRoleGrantPermission != nil:
		return "AuthRoleGrantPermission"
	case r.AuthRoleGet != nil:
		return "AuthRoleGet"
	case r.AuthRoleRevokePermission != nil:
		return "AuthRoleRevokePermission"
	case r.AuthRoleDelete != nil:
		return "AuthRoleDelete"
	case r.AuthUserList != nil:
		return "AuthUserList"
	case r.AuthRoleList != nil:
		return "AuthRoleList"
	case r.ClusterVersionSet != nil:
		return "ClusterVersionSet"
	case r.ClusterMemberAttrSet != nil:
		return "ClusterMemberAttrSet"
	case r.DowngradeInfoSet != nil:
		return "DowngradeInfoSet"
	case r.DowngradeVersionTest != nil:
		return "DowngradeVersionTest"
	}
	return "Unknown"
}
