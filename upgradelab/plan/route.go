package plan

import (
	"errors"
	"fmt"
)

// Route is a planned path (upgradelab assess) as a lab plan: where the cluster starts and
// each hop, run in place (stop, swap the binary, start, one member at a time, the leader
// last) or, for hops up, by rolling replacement (add a learner at the new subject, promote
// it, remove an old member; one member at a time).
type Route struct {
	Name        string
	Description string
	Members     int
	// Start is the subject every member starts as, StartLevel its major.minor.
	Start, StartLevel string
	Hops              []RouteHop
	// Replacement runs the hops up by rolling replacement instead of in place.
	Replacement bool
}

// RouteHop is one hop: its kind (patch, upgrade or downgrade, as releases.Hop), the subject
// the members move to and its major.minor. Snapshot has every member save a snapshot after the
// hop, before the next (releases.Knowledge.SnapshotAfter says when a path needs it).
type RouteHop struct {
	Kind, Subject, Level string
	Snapshot             bool
}

// Hop kinds a route takes.
const (
	RoutePatch     = "patch"
	RouteUpgrade   = "upgrade"
	RouteDowngrade = "downgrade"
)

// Plan builds the lab plan, with an expectation after each hop: every binary at the hop's
// level, the cluster and storage versions where the hop moves them.
func (r Route) Plan() (*Plan, error) {
	if len(r.Hops) == 0 {
		return nil, errors.New("route: no hop to take: the cluster is already there")
	}
	p := &Plan{Name: r.Name, Description: r.Description, Members: r.Members, Start: r.Start}
	add := func(s Step) { p.Steps = append(p.Steps, s) }
	members := make([]string, r.Members)
	for i := range members {
		members[i] = fmt.Sprintf("m%d", i+1)
	}
	next := r.Members + 1
	cluster := r.StartLevel
	if cluster != "" {
		add(Step{Expect: &Expect{Server: cluster, Cluster: cluster}})
	}
	for _, h := range r.Hops {
		switch h.Kind {
		case RoutePatch, RouteUpgrade:
			if r.Replacement {
				for i, old := range members {
					name := fmt.Sprintf("m%d", next)
					next++
					add(Step{Add: &Add{Version: h.Subject, Learner: true}})
					add(Step{Promote: name})
					add(Step{Remove: old})
					members[i] = name
				}
			} else {
				add(Step{Replace: &Replace{Version: h.Subject, Order: OrderLeaderLast}})
			}
			if h.Kind == RouteUpgrade {
				cluster = h.Level
			}
			add(Step{Expect: &Expect{Server: h.Level, Cluster: cluster, Storage: storageOf(cluster)}})
			if h.Snapshot {
				add(Step{Snapshot: &Snapshot{}})
			}
		case RouteDowngrade:
			add(Step{Downgrade: &Downgrade{Action: "validate", Version: h.Level}})
			add(Step{Downgrade: &Downgrade{Action: "enable", Version: h.Level}})
			add(Step{Expect: &Expect{Cluster: h.Level, Storage: storageOf(h.Level)}})
			add(Step{Replace: &Replace{Version: h.Subject, Order: OrderLeaderLast}})
			add(Step{Expect: &Expect{Server: h.Level, Cluster: h.Level, Storage: storageOf(h.Level)}})
			cluster = h.Level
		default:
			return nil, fmt.Errorf("route: hop kind %q is none of patch, upgrade, downgrade", h.Kind)
		}
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("route: built an invalid plan (a bug): %w", err)
	}
	return p, nil
}

// storageOf is the storage version a cluster at level settles at: none before 3.6 (a member
// reports none, which the lab reads as 3.5), the level after.
func storageOf(level string) string {
	var major, minor int
	if _, err := fmt.Sscanf(level, "%d.%d", &major, &minor); err != nil || major == 3 && minor < 5 {
		return ""
	}
	return level
}
