package assess

import (
	"etcdx/etcdutl/offline"
	"etcdx/upgradelab/cluster"
)

// Facts are what was observed, before any judgement.
type Facts struct {
	// Members are every member the cluster lists, and any stopped member given by data dir.
	Members []Member `json:"members"`
	// ClusterVersion is the cluster version the members report ("3.5.0"; "" when none answered).
	ClusterVersion string `json:"clusterVersion,omitempty"`
	// Downgrade is the downgrade a member reports enabled (nil: none).
	Downgrade *Downgrade `json:"downgrade,omitempty"`
	Alarms    []Alarm    `json:"alarms,omitempty"`
	// Unreachable are endpoints given that did not answer.
	Unreachable []string `json:"unreachable,omitempty"`
}

// Member is one member's facts; each part is empty when its source was not given.
type Member struct {
	Name string `json:"name"`
	ID   string `json:"id,omitempty"` // hex, as etcdctl prints it
	// Listed says the cluster's member list has it (a data dir or config of a member the list
	// lacks is judged, but not counted as a member that did not answer).
	Listed bool `json:"listed,omitempty"`
	// Learner is the member's kind in the cluster's member list.
	Learner bool `json:"learner,omitempty"`
	// Live is what the running member answered (nil: it did not, or it was not asked).
	Live *Live `json:"live,omitempty"`
	// DataDir is what a stopped member's data dir holds (nil: not given).
	DataDir *DataDir `json:"dataDir,omitempty"`
	// Flags are the member's flags by name without dashes, from FlagsFrom.
	Flags     map[string]string `json:"flags,omitempty"`
	FlagsFrom string            `json:"flagsFrom,omitempty"`
}

// Live is what a running member reports about itself.
type Live struct {
	Endpoint string `json:"endpoint"`
	// Version is the server's version ("3.5.17"); StorageVersion its storage version ("" before
	// 3.6, which records none).
	Version        string `json:"version"`
	StorageVersion string `json:"storageVersion,omitempty"`
	ClusterVersion string `json:"clusterVersion,omitempty"`
	DBSize         int64  `json:"dbSize"`
	DBSizeInUse    int64  `json:"dbSizeInUse"`
	// Quota is --quota-backend-bytes as the member's metrics report it (0: unknown).
	Quota        int64    `json:"quota,omitempty"`
	RaftIndex    uint64   `json:"raftIndex"`
	AppliedIndex uint64   `json:"appliedIndex"`
	Leader       bool     `json:"leader,omitempty"`
	Errors       []string `json:"errors,omitempty"`
	// Metrics is what the member's /metrics said (nil: it did not answer).
	Metrics *cluster.Metrics `json:"metrics,omitempty"`
}

// DataDir is what a stopped member's data dir holds.
type DataDir struct {
	Path string `json:"path"`
	// V2Custom is custom content in the v2 store or the WAL (etcdutl check v2store).
	V2Custom offline.V2Custom `json:"v2Custom"`
	// Zombies, Demoted and Missing are the member IDs (hex) where the v3 store disagrees with
	// the v2 store (membership.Drift).
	Zombies []string `json:"zombies,omitempty"`
	Demoted []string `json:"demoted,omitempty"`
	Missing []string `json:"missing,omitempty"`
	// StorageVersion is the database's storage version ("" before 3.6).
	StorageVersion string `json:"storageVersion,omitempty"`
	DBSize         int64  `json:"dbSize"`
}

// Downgrade is an enabled downgrade.
type Downgrade struct {
	Target string `json:"target"`
}

// Alarm is an alarm a member raised.
type Alarm struct {
	Member string `json:"member"`
	Type   string `json:"type"`
}
