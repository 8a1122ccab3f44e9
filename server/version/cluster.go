package version

// Member is what the replicated membership says about one member's binary.
type Member struct {
	ID uint64
	// Version is the server version the member last published; "" when it never started (added
	// with `member add` but not yet run). A member that is down keeps its last version.
	Version string
}

// Cluster is what every member knows of the cluster's versions, all of it replicated through raft.
type Cluster struct {
	Version   Level // zero until the leader first decides
	Downgrade DowngradeInfo
	Members   []Member
}

// Decision is what the leader should propose next about the cluster version.
type Decision struct {
	// SetVersion, when not zero, is the cluster version to propose.
	SetVersion Level
	// FinishDowngrade: every member runs the downgrade target; clear the downgrade info.
	FinishDowngrade bool
	// WaitingFor are the members a downgrade waits for: started, and not running the target
	// (their binary must be swapped, or the member removed). Members that never started are not
	// waited for: when they start, CheckJoin refuses a binary newer than the target.
	WaitingFor []uint64
	// HeldBy, in an upgrade under way (some member runs a newer level than the cluster version),
	// are the members still at the cluster version: it rises once each of them runs the newer
	// level.
	HeldBy []uint64
}

// lowest is the lowest level among the members, and false when some member's level is unknown
// (a member that never started, or an unreadable version): then nothing is decided, as upstream.
func (c Cluster) lowest() (Level, bool) {
	var low Level
	for _, m := range c.Members {
		if m.Version == "" {
			return Level{}, false
		}
		l, err := ParseLevel(m.Version)
		if err != nil {
			return Level{}, false
		}
		if low.IsZero() || l.Less(low) {
			low = l
		}
	}
	return low, !low.IsZero()
}

// Decide is the leader's rule: the cluster version is the lowest member level and only ever
// rises; while a downgrade is enabled it is the target, and the downgrade finishes once every
// member that has started runs the target. Unlike upstream, a member added during the downgrade
// that has not started (its version is unknown) holds up neither step.
func (c Cluster) Decide() Decision {
	if c.Downgrade.Enabled {
		target := c.Downgrade.Target()
		if c.Version != target {
			return Decision{SetVersion: target}
		}
		var d Decision
		for _, m := range c.Members {
			if m.Version == "" {
				continue
			}
			if l, _ := ParseLevel(m.Version); l != target {
				d.WaitingFor = append(d.WaitingFor, m.ID)
			}
		}
		d.FinishDowngrade = len(d.WaitingFor) == 0
		return d
	}
	low, ok := c.lowest()
	if !ok {
		return Decision{}
	}
	if c.Version.IsZero() || c.Version.Less(low) {
		return Decision{SetVersion: low}
	}
	var d Decision
	newer := false
	for _, m := range c.Members {
		l, _ := ParseLevel(m.Version)
		if l == c.Version {
			d.HeldBy = append(d.HeldBy, m.ID)
		}
		newer = newer || c.Version.Less(l)
	}
	if !newer {
		d.HeldBy = nil
	}
	return d
}

// ValidateDowngrade accepts, for a binary at level bin, only a target exactly one minor below the
// cluster version that this tree implements, when no downgrade is under way.
func (c Cluster) ValidateDowngrade(bin Level, target string) error {
	t, err := ParseLevel(target)
	if err != nil {
		return ErrWrongDowngradeFormat
	}
	if c.Downgrade.Enabled {
		return ErrDowngradeInProcess
	}
	if c.Version.IsZero() {
		return ErrClusterVersionUnknown
	}
	if !Downgrade.On(bin, c.Version) || t != c.Version.Prev() || !IsKnown(t) {
		return ErrInvalidDowngradeTarget
	}
	return nil
}

// Skew is how a member's binary stands against the cluster, for its warnings.
type Skew struct {
	// Behind: some member (NewestID) runs a newer binary (NewestVersion) and no downgrade
	// explains it.
	Behind        bool
	NewestID      uint64
	NewestVersion string
	// Ahead: the cluster version is below this binary's level, so its newer features stay off.
	Ahead bool
}

// Skew compares a binary at level bin with the members and the cluster version.
func (c Cluster) Skew(bin Level) Skew {
	var newest Level
	var sk Skew
	for _, m := range c.Members {
		if l, err := ParseLevel(m.Version); err == nil && newest.Less(l) {
			newest, sk.NewestID, sk.NewestVersion = l, m.ID, m.Version
		}
	}
	switch {
	case c.Downgrade.Enabled:
		return Skew{}
	case bin.Less(newest):
		sk.Behind = true
	case !c.Version.IsZero() && c.Version.Less(bin):
		sk.Ahead = true
	}
	return sk
}
