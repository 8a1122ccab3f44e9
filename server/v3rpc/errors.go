package v3rpc

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"etcdx/server/auth"
	"etcdx/server/backend"
	"etcdx/server/etcdserver"
	"etcdx/server/lease"
	"etcdx/server/membership"
	"etcdx/server/mvcc"
	"etcdx/server/version"
)

var errorTable = []struct {
	err  error
	grpc error
}{
	{mvcc.ErrCompacted, rpctypes.ErrGRPCCompacted},
	{mvcc.ErrFutureRev, rpctypes.ErrGRPCFutureRev},
	{etcdserver.ErrKeyNotFound, rpctypes.ErrGRPCKeyNotFound},
	{etcdserver.ErrNoSpace, rpctypes.ErrGRPCNoSpace},
	{etcdserver.ErrCorrupt, rpctypes.ErrGRPCCorrupt},
	{etcdserver.ErrRequestTooLarge, rpctypes.ErrGRPCRequestTooLarge},
	{etcdserver.ErrNoLeader, rpctypes.ErrGRPCNoLeader},
	{etcdserver.ErrNotLeader, rpctypes.ErrGRPCNotLeader},
	{etcdserver.ErrStopped, rpctypes.ErrGRPCStopped},
	{etcdserver.ErrTimeout, rpctypes.ErrGRPCTimeout},
	{etcdserver.ErrTooManyRequests, rpctypes.ErrGRPCRequestTooManyRequests},
	{etcdserver.ErrTimeoutWaitAppliedIndex, rpctypes.ErrGRPCTimeoutWaitAppliedIndex},
	{etcdserver.ErrBadTransferee, rpctypes.ErrGRPCBadLeaderTransferee},
	{membership.ErrMemberNotFound, rpctypes.ErrGRPCMemberNotFound},
	{membership.ErrMemberExist, rpctypes.ErrGRPCMemberExist},
	{membership.ErrPeerURLExist, rpctypes.ErrGRPCPeerURLExist},
	{membership.ErrIDRemoved, rpctypes.ErrGRPCMemberNotFound},
	{membership.ErrNotLearner, rpctypes.ErrGRPCMemberNotLearner},
	{membership.ErrLearnerNotReady, rpctypes.ErrGRPCLearnerNotReady},
	{membership.ErrTooManyLearners, rpctypes.ErrGRPCTooManyLearners},
	{etcdserver.ErrNotForLearner, rpctypes.ErrGRPCNotSupportedForLearner},
	{lease.ErrNotFound, rpctypes.ErrGRPCLeaseNotFound},
	{lease.ErrExists, rpctypes.ErrGRPCLeaseExist},
	{lease.ErrTTLTooLarge, rpctypes.ErrGRPCLeaseTTLTooLarge},
	{lease.ErrNotPrimary, rpctypes.ErrGRPCNotLeader},
	{backend.ErrLocked, rpctypes.ErrGRPCStopped},
	{membership.ErrNotEnoughStartedMembers, rpctypes.ErrGRPCMemberNotEnoughStarted},
	{membership.ErrUnhealthy, rpctypes.ErrGRPCUnhealthy},
	{version.ErrInvalidDowngradeTarget, rpctypes.ErrGRPCInvalidDowngradeTargetVersion},
	{version.ErrWrongDowngradeFormat, rpctypes.ErrGRPCWrongDowngradeVersionFormat},
	{version.ErrDowngradeInProcess, rpctypes.ErrGRPCDowngradeInProcess},
	{version.ErrNoInflightDowngrade, rpctypes.ErrGRPCNoInflightDowngrade},
	{version.ErrClusterVersionUnknown, rpctypes.ErrGRPCClusterVersionUnavailable},
	{auth.ErrRootUserNotExist, rpctypes.ErrGRPCRootUserNotExist},
	{auth.ErrRootRoleNotExist, rpctypes.ErrGRPCRootRoleNotExist},
	{auth.ErrUserAlreadyExist, rpctypes.ErrGRPCUserAlreadyExist},
	{auth.ErrUserEmpty, rpctypes.ErrGRPCUserEmpty},
	{auth.ErrUserNotFound, rpctypes.ErrGRPCUserNotFound},
	{auth.ErrRoleAlreadyExist, rpctypes.ErrGRPCRoleAlreadyExist},
	{auth.ErrRoleNotFound, rpctypes.ErrGRPCRoleNotFound},
	{auth.ErrRoleEmpty, rpctypes.ErrGRPCRoleEmpty},
	{auth.ErrAuthFailed, rpctypes.ErrGRPCAuthFailed},
	{auth.ErrPermissionNotGiven, rpctypes.ErrGRPCPermissionNotGiven},
	{auth.ErrPermissionDenied, rpctypes.ErrGRPCPermissionDenied},
	{auth.ErrRoleNotGranted, rpctypes.ErrGRPCRoleNotGranted},
	{auth.ErrPermissionNotGranted, rpctypes.ErrGRPCPermissionNotGranted},
	{auth.ErrAuthNotEnabled, rpctypes.ErrGRPCAuthNotEnabled},
	{auth.ErrInvalidAuthToken, rpctypes.ErrGRPCInvalidAuthToken},
	{auth.ErrInvalidAuthMgmt, rpctypes.ErrGRPCInvalidAuthMgmt},
	{auth.ErrAuthOldRevision, rpctypes.ErrGRPCAuthOldRevision},
	{context.Canceled, rpctypes.ErrGRPCCanceled},
	{context.DeadlineExceeded, rpctypes.ErrGRPCDeadlineExceeded},
}

// togRPCError turns a server error into the status error upstream clients expect.
func togRPCError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.grpc
		}
	}
	return status.Error(codes.Unknown, err.Error())
}
