// Package features holds the server's feature gates: upstream 3.6's gate names and defaults,
// set with --feature-gates=Name=true,... or through the deprecated --experimental-* flags
// that each stand for one gate.
package features

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
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
}

var known = map[Feature]spec{
	StopGRPCServiceOnDefrag:      {false, alpha},
	InitialCorruptCheck:          {false, alpha},
	CompactHashCheck:             {false, alpha},
	TxnModeWriteWithSharedBuffer: {true, beta},
	LeaseCheckpoint:              {false, alpha},
	LeaseCheckpointPersist:       {false, alpha},
	SetMemberLocalAddr:           {false, alpha},
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

// Gates is the set of gates a member runs with. The zero value has upstream's defaults. It
// is a flag.Value for --feature-gates.
type Gates struct {
	set map[Feature]bool
	// given is the --feature-gates text as the operator wrote it.
	given string
}

// Enabled says whether f is on.
func (g *Gates) Enabled(f Feature) bool {
	if g == nil {
		return known[f].def
	}
	if v, ok := g.set[f]; ok {
		return v
	}
	return known[f].def
}

// Status is one gate's state, for etcd_server_feature_enabled.
type Status struct {
	Name, Stage string
	On          bool
}

// All lists every gate (the stage-wide switches too, as upstream exports them).
func (g *Gates) All() []Status {
	out := []Status{{string(allAlpha), "ALPHA", g != nil && g.set[allAlpha]}, {string(allBeta), "BETA", g != nil && g.set[allBeta]}}
	for f, s := range known {
		st := "ALPHA"
		if s.stage == beta {
			st = "BETA"
		}
		on := s.def
		if g != nil {
			on = g.Enabled(f)
		}
		out = append(out, Status{string(f), st, on})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Names lists every gate with its default, for the help text.
func Names() []string {
	var out []string
	for f, s := range known {
		st := "ALPHA"
		if s.stage == beta {
			st = "BETA"
		}
		out = append(out, fmt.Sprintf("%s=true|false (%s - default=%t)", f, st, s.def))
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
		if _, ok := known[k]; !ok && k != allAlpha && k != allBeta {
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
			for f, s := range known {
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
