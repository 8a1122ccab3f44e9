package version

import "errors"

// Downgrade refusals, with upstream's texts (the gRPC layer maps each to upstream's code).
var (
	ErrInvalidDowngradeTarget = errors.New("etcdserver: invalid downgrade target version")
	ErrWrongDowngradeFormat   = errors.New("etcdserver: wrong downgrade target version format")
	ErrDowngradeInProcess     = errors.New("etcdserver: cluster has a downgrade job in progress")
	ErrNoInflightDowngrade    = errors.New("etcdserver: no inflight downgrade job")
	ErrClusterVersionUnknown  = errors.New("etcdserver: cluster version not found during downgrade")
)
