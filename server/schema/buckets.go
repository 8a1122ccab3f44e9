package schema

// Buckets, as upstream names them.
var (
	Key            = []byte("key")             // revision key -> mvccpb.KeyValue
	Meta           = []byte("meta")            // see the Meta* keys
	Lease          = []byte("lease")           // lease ID -> leasepb.Lease
	Alarm          = []byte("alarm")           // encoded AlarmMember -> empty
	Cluster        = []byte("cluster")         // clusterVersion, downgrade
	Members        = []byte("members")         // member ID in hex -> member JSON
	MembersRemoved = []byte("members_removed") // member ID in hex -> "removed"
	Auth           = []byte("auth")
	AuthUsers      = []byte("authUsers")
	AuthRoles      = []byte("authRoles")
)

// Buckets lists every bucket a member's file has; the backend creates them when it opens a file.
var Buckets = [][]byte{Key, Meta, Lease, Alarm, Cluster, Members, MembersRemoved, Auth, AuthUsers, AuthRoles}

// Keys of the meta bucket.
var (
	MetaConsistentIndex  = []byte("consistent_index")    // uint64: the last applied raft index
	MetaTerm             = []byte("term")                // uint64: the term of that entry
	MetaScheduledCompact = []byte("scheduledCompactRev") // revision key: a compaction being done
	MetaFinishedCompact  = []byte("finishedCompactRev")  // revision key: the last compaction done
	MetaConfState        = []byte("confState")           // raft ConfState JSON (upstream 3.5+)
	MetaStorageVersion   = []byte("storageVersion")      // "3.6.0"; absent means 3.5
)

// Keys of the cluster bucket.
var (
	ClusterVersion   = []byte("clusterVersion") // "3.6.0"
	ClusterDowngrade = []byte("downgrade")      // DowngradeInfo JSON
)
