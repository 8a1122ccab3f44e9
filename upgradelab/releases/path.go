package releases

import (
	"errors"
	"fmt"
	"sort"

	"github.com/coreos/go-semver/semver"
)

// Hop kinds.
const (
	// HopPatch moves members within their line (to its newest patch, or the target's).
	HopPatch = "patch"
	// HopUpgrade moves every member into the next minor.
	HopUpgrade = "upgrade"
	// HopDowngrade lowers the cluster one minor (downgrade enable, then the binaries).
	HopDowngrade = "downgrade"
)

// Hop is one stage of a path: every member not yet at To moves to it, one at a time.
type Hop struct {
	Kind string          `json:"kind"`
	From []string        `json:"from"` // the versions the members leave
	To   *semver.Version `json:"to"`
	Why  string          `json:"why"`
}

// ErrMixedDowngrade refuses to plan a downgrade of a cluster still in the middle of an upgrade.
var ErrMixedDowngrade = errors.New("the members run different minors: finish or roll back the upgrade before planning a downgrade")

// Path is the safe sequence of hops from the members' versions to target: patch hops first
// where a member is below the patch its line may be left from (or below a same-line target),
// then one minor at a time, each to its line's newest patch (the target's own patch on the
// last), never skipping a minor. A downgrade goes down one minor at a time, from a cluster
// whose members all run one minor.
func (k *Knowledge) Path(members []*semver.Version, target *semver.Version) ([]Hop, error) {
	if len(members) == 0 {
		return nil, errors.New("no member versions to plan from")
	}
	sorted := append([]*semver.Version(nil), members...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].LessThan(*sorted[j]) })
	low, high := sorted[0], sorted[len(sorted)-1]
	for _, v := range sorted {
		if _, ok := k.Line(MinorOf(v)); !ok {
			return nil, fmt.Errorf("a member runs %s: no release line %s is known (known: %v)", v, MinorOf(v), k.Minors())
		}
	}
	if _, ok := k.Line(MinorOf(target)); !ok {
		return nil, fmt.Errorf("target %s: no release line %s is known (known: %v)", target, MinorOf(target), k.Minors())
	}
	if minorLess(MinorOf(target), MinorOf(low)) {
		if MinorOf(low) != MinorOf(high) {
			return nil, ErrMixedDowngrade
		}
		return k.downPath(sorted, target)
	}
	return k.upPath(sorted, target)
}

func (k *Knowledge) upPath(members []*semver.Version, target *semver.Version) ([]Hop, error) {
	var hops []Hop
	current := append([]*semver.Version(nil), members...)
	low := MinorOf(current[0])
	targetMinor := MinorOf(target)

	// Within the lowest line first.
	line, _ := k.Line(low)
	patchTo := target
	var why string
	if low != targetMinor {
		patchTo = semver.New(line.Latest)
		if line.LeaveFrom != "" {
			leave := semver.New(line.LeaveFrom)
			for _, v := range current {
				if MinorOf(v) == low && v.LessThan(*leave) {
					why = fmt.Sprintf("%s is below %s, the lowest %s patch from which %s may be entered", v, leave, low, k.Next(low))
					break
				}
			}
		}
	} else {
		for _, v := range current {
			if !v.Equal(*target) {
				why = fmt.Sprintf("every member to the target %s", target)
				break
			}
		}
	}
	if why != "" {
		same := low == targetMinor
		hops = append(hops, hopOf(HopPatch, current, patchTo, same, why))
		current = move(current, patchTo, same)
	}

	for _, m := range k.MinorsBetween(low, targetMinor) {
		to := target
		if m != targetMinor {
			to, _ = k.Latest(m)
		}
		prev := MinorOf(current[0])
		hops = append(hops, hopOf(HopUpgrade, current, to, false,
			fmt.Sprintf("%s to %s: one minor at a time", prev, m)))
		current = move(current, to, false)
	}
	return hops, nil
}

func (k *Knowledge) downPath(members []*semver.Version, target *semver.Version) ([]Hop, error) {
	var hops []Hop
	current := append([]*semver.Version(nil), members...)
	minor := MinorOf(current[0])
	for minorLess(MinorOf(target), minor) {
		lower := ""
		for _, l := range k.Lines {
			if minorLess(l.Minor, minor) {
				lower = l.Minor
			}
		}
		// Each stop on the way lands on its line's newest patch; the last on the target.
		to := target
		if lower != MinorOf(target) {
			to, _ = k.Latest(lower)
		}
		hops = append(hops, hopOf(HopDowngrade, current, to, true,
			fmt.Sprintf("%s to %s: downgrade enable %s, then every member's binary, one minor at a time", minor, lower, lower)))
		current = move(current, to, true)
		minor = lower
	}
	return hops, nil
}

// hopOf is a hop to to from the members move would move.
func hopOf(kind string, current []*semver.Version, to *semver.Version, all bool, why string) Hop {
	seen := map[string]bool{}
	var from []string
	for _, v := range current {
		if moves(v, to, all) && !seen[v.String()] {
			seen[v.String()] = true
			from = append(from, v.String())
		}
	}
	return Hop{Kind: kind, From: from, To: to, Why: why}
}

// move is current after a hop to to: the members below it (every member but those at it, when
// all) run to; the result stays sorted.
func move(current []*semver.Version, to *semver.Version, all bool) []*semver.Version {
	out := make([]*semver.Version, len(current))
	for i, v := range current {
		out[i] = v
		if moves(v, to, all) {
			out[i] = to
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LessThan(*out[j]) })
	return out
}

func moves(v, to *semver.Version, all bool) bool {
	if all {
		return !v.Equal(*to)
	}
	return v.LessThan(*to)
}

// SnapshotAfter says whether every member must save a snapshot after hop i of a path before the
// next hop, and the blocker that asks for it: a blocker cleared by a snapshot whose affected
// versions the hop leaves (members still on them keep writing the entries) and whose minor a
// later hop enters. 3.4 members leave v2 reads that 3.6 refuses to replay; 3.5 members leave v2
// requests that upstream 3.7 cannot read.
func (k *Knowledge) SnapshotAfter(hops []Hop, i int) (Blocker, bool) {
	if hops[i].Kind == HopDowngrade {
		return Blocker{}, false
	}
	for _, b := range k.Blockers {
		if !b.ClearedBySnapshot || b.Affects(hops[i].To) {
			continue
		}
		leaves := false
		for _, from := range hops[i].From {
			if v, err := ParseVersion(from); err == nil && b.Affects(v) {
				leaves = true
			}
		}
		if !leaves {
			continue
		}
		for _, h := range hops[i+1:] {
			if h.Kind != HopDowngrade && MinorOf(h.To) == b.Into {
				return b, true
			}
		}
	}
	return Blocker{}, false
}
