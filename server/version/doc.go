// Package version holds every rule of the version lifecycle, as pure functions of the versions
// they are about: the levels (major.minor) this tree implements, the features each level brings,
// which binary may start, join or peer with which cluster (compat.go), how the leader decides the
// cluster version and when a downgrade is valid or complete (cluster.go), and which storage
// version a member holds (storage.go). The server's loops and RPCs call these rules; no one else
// compares version strings.
//
// The binary's own version is stamped into etcdx/pkg/buildinfo; Local reads its level.
//
// The files:
//
//	version.go  Level: the levels this tree implements, parsing and ordering them
//	binary.go   Local, the level this binary was built at, and CheckBuild
//	features.go Feature: the behaviours each level brings, on once the cluster version has it
//	compat.go   who may start on which data, join or peer with which cluster (CheckStart,
//	            CheckJoin, CheckPeer, CheckRun); the replicated DowngradeInfo
//	cluster.go  the leader's rule for the cluster version (Cluster.Decide), when a downgrade is
//	            valid (ValidateDowngrade), how a binary stands against the cluster (Skew)
//	storage.go  the storage version a member keeps its backend at (StorageTarget), and when a
//	            member is ready to be downgraded (ReadyToDowngrade)
//	errors.go   the downgrade refusals, with upstream's texts
package version
