// Package features holds the server's feature gates: upstream's gate names and defaults at each
// level (a gate exists from the level that brought it: 3.6's gates, then 3.7's), set with
// --feature-gates=Name=true,... or, below 3.7, through the deprecated --experimental-* flags
// that each stand for one gate.
package features

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"etcdx/server/version"
)

// Feature is a gate's name, as upstream spells it.
type Feature string

// Upstream 3.6's server gates.
const (
	StopGRPCServiceOnDefrag      Feature = "StopGRPCServiceOnDefrag"
	TxnModeWriteWithSharedBuffer Feature = "TxnModeWriteWithSharedBuffer"
	InitialCorruptCheck          Feature = "InitialCorruptCheck"
	CompactHashCheck             Feature = "CompactHashCheck"
	LeaseCheckpoint              Feature = "LeaseCheckpoint"
	LeaseCheckpointPersist       Feature = "LeaseCheckpointPersist"
	SetMemberLocalAddr           Feature = "SetMemberLocalAddr"
	// Upstream 3.7's: a leader renews a lease it knows without waiting for its applied index to
	// catch up; a lease revocation is still accepted when the applied index lags further.
	FastLeaseKeepAlive Feature = "FastLeaseKeepAlive"
	PriorityRequest    Feature = "PriorityRequest"

	// allAlpha and allBeta set every gate of that stage at once.
	allAlpha Feature = "AllAlpha"
	allBeta  Feature = "AllBeta"
)

type stage int

const (
	alpha stage = iota
	beta
)

type spec struct {
	def   bool
	stage stage
	since version.Level // the level that brought the gate; zero for 3.6's
}

var known = map[Feature]spec{
	StopGRPCServiceOnDefrag:      {false, alpha, version.Level{}},
	InitialCorruptCheck:          {false, alpha, version.Level{}},
	CompactHashCheck:             {false, alpha, version.Level{}},
	TxnModeWriteWithSharedBuffer: {true, beta, version.Level{}},
	LeaseCheckpoint:              {false, alpha, version.Level{}},
	LeaseCheckpointPersist:       {false, alpha, version.Level{}},
	SetMemberLocalAddr:           {false, alpha, version.Level{}},
	FastLeaseKeepAlive:           {true, beta, version.V3_7},
	PriorityRequest:              {false, alpha, version.V3_7},
}

// builtAt says whether a binary at level has the gate.
func (s spec) builtAt(level version.Level) bool { return !level.Less(s.since) }

// at lists the gates a binary at level has.
func at(level version.Level) map[Feature]spec {
	out := map[Feature]spec{}
	for f, s := range known {
		if s.builtAt(level) {
			out[f] = s
		}
	}
	return out
}

// ExperimentalFlags maps each deprecated --experimental-* boolean flag to the gate it sets.
var ExperimentalFlags = map[string]Feature{
	"experimental-stop-grpc-service-on-defrag":       StopGRPCServiceOnDefrag,
	"experimental-initial-corrupt-check":             InitialCorruptCheck,
	"experimental-compact-hash-check-enabled":        CompactHashCheck,
	"experimental-txn-mode-write-with-shared-buffer": TxnModeWriteWithSharedBuffer,
	"experimental-enable-lease-checkpoint":           LeaseCheckpoint,
	"experimental-enable-lease-checkpoint-persist":   LeaseCheckpointPersist,
}

// binaryLevel is the level this binary was built at, read once (Enabled is on request paths).
var binaryLevel = version.Local()

// Gates is the set of gates a member runs with. The zero value has upstream's defaults at this
// binary's level. It is a flag.Value for --feature-gates.
type Gates struct {
	// Level is whose gates these are; zero means this binary's level.
	Level version.Level
	set   map[Feature]bool
	// given is the --feature-gates text as the operator wrote it.
	given string
}

func (g *Gates) level() version.Level {
	if g == nil || g.Level.IsZero() {
		return binaryLevel
	}
	return g.Level
}

// spec is f's definition, if the gates' level has f.
func (g *Gates) spec(f Feature) (spec, bool) {
	s, ok := known[f]
	return s, ok && s.builtAt(g.level())
}

// Enabled says whether f is on. A gate the level does not have is off: its behaviour is the
// level's own (a 3.6 member renews leases as 3.6 does).
func (g *Gates) Enabled(f Feature) bool {
	s, ok := g.spec(f)
	if !ok {
		return false
	}
	if g != nil {
		if v, ok := g.set[f]; ok {
			return v
		}
	}
	return s.def
}

// Status is one gate's state, for etcd_server_feature_enabled.
type Status struct {
	Name, Stage string
	On          bool
}

// All lists every gate (the stage-wide switches too, as upstream exports them).
func (g *Gates) All() []Status {
	out := []Status{{string(allAlpha), "ALPHA", g != nil && g.set[allAlpha]}, {string(allBeta), "BETA", g != nil && g.set[allBeta]}}
	for f, s := range at(g.level()) {
		out = append(out, Status{string(f), s.stage.String(), g.Enabled(f)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (s stage) String() string {
	if s == beta {
		return "BETA"
	}
	return "ALPHA"
}

// Names lists every gate of level with its default, for the help text.
func Names(level version.Level) []string {
	var out []string
	for f, s := range at(level) {
		out = append(out, fmt.Sprintf("%s=true|false (%s - default=%t)", f, s.stage, s.def))
	}
	sort.Strings(out)
	return append([]string{"AllAlpha=true|false (ALPHA - default=false)", "AllBeta=true|false (BETA - default=false)"}, out...)
}

// Set parses "Name=bool,..." as upstream does and applies it.
func (g *Gates) Set(value string) error {
	m := map[Feature]bool{}
	for _, part := range strings.Split(value, ",") {
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		if !ok {
			return fmt.Errorf("missing bool value for %s", k)
		}
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("invalid value of %s=%s, err: %w", k, strings.TrimSpace(v), err)
		}
		m[Feature(k)] = b
	}
	if err := g.apply(m); err != nil {
		return err
	}
	g.given = value
	return nil
}

func (g *Gates) apply(m map[Feature]bool) error {
	for k := range m {
		if _, ok := g.spec(k); !ok && k != allAlpha && k != allBeta {
			return fmt.Errorf("unrecognized feature gate: %s", k)
		}
	}
	if g.set == nil {
		g.set = map[Feature]bool{}
	}
	// The stage-wide switches first, so a named gate given with them wins.
	for _, all := range []struct {
		f Feature
		s stage
	}{{allAlpha, alpha}, {allBeta, beta}} {
		if v, ok := m[all.f]; ok {
			g.set[all.f] = v
			for f, s := range at(g.level()) {
				if s.stage == all.s {
					g.set[f] = v
				}
			}
		}
	}
	for k, v := range m {
		if k != allAlpha && k != allBeta {
			g.set[k] = v
		}
	}
	return nil
}

// String lists the gates that were set, as upstream prints them.
func (g *Gates) String() string {
	if g == nil {
		return ""
	}
	var pairs []string
	for k, v := range g.set {
		pairs = append(pairs, fmt.Sprintf("%s=%t", k, v))
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

// SetFromExperimental applies the deprecated --experimental-* booleans that were given
// (flag name -> value). Naming a gate in --feature-gates too is refused, with upstream's text.
func (g *Gates) SetFromExperimental(given map[string]bool) error {
	names := make([]string, 0, len(given))
	for n := range given {
		names = append(names, n)
	}
	sort.Strings(names)
	m := map[Feature]bool{}
	for _, flag := range names {
		f, ok := ExperimentalFlags[flag]
		if !ok {
			continue
		}
		if strings.Contains(g.given, string(f)) {
			return fmt.Errorf("cannot specify both flags: --%s=%v and --feature-gates=%s=%v at the same time, please just use --feature-gates=%s=%v",
				flag, given[flag], f, g.Enabled(f), f, g.Enabled(f))
		}
		m[f] = given[flag]
	}
	return g.apply(m)
}
