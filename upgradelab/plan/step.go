package plan

import (
	"fmt"
	"strings"
	"time"
)

// StepKind is what a step does; its string is the step's key in a YAML plan and its name in
// logs, traces and reports.
type StepKind string

// The step kinds.
const (
	KindReplace   StepKind = "replace"
	KindDowngrade StepKind = "downgrade"
	KindExpect    StepKind = "expect"
	KindKill      StepKind = "kill"
	KindRestart   StepKind = "restart"
	KindPartition StepKind = "partition"
	KindHeal      StepKind = "heal"
	KindFreeze    StepKind = "freeze"
	KindThaw      StepKind = "thaw"
	KindWait      StepKind = "wait"
	KindAdd       StepKind = "add"
	KindPromote   StepKind = "promote"
	KindRemove    StepKind = "remove"
	KindCompact   StepKind = "compact"
	KindDefrag    StepKind = "defrag"
	KindRefuse    StepKind = "refuse"
	KindCrash     StepKind = "crash"
	KindSnapshot  StepKind = "snapshot"
)

// Kinds lists every step kind, in the order the docs present them.
var Kinds = []StepKind{KindReplace, KindDowngrade, KindExpect, KindKill, KindRestart, KindPartition, KindHeal,
	KindFreeze, KindThaw, KindWait, KindAdd, KindPromote, KindRemove, KindCompact, KindDefrag, KindRefuse, KindCrash, KindSnapshot}

// Targets a step may name besides a member: chosen when the step runs.
const (
	TargetLeader   = "leader"
	TargetFollower = "follower"
	TargetAll      = "all"
)

// actions lists the step's action fields that are set, by kind.
func (s Step) actions() []StepKind {
	var out []StepKind
	add := func(set bool, k StepKind) {
		if set {
			out = append(out, k)
		}
	}
	add(s.Replace != nil, KindReplace)
	add(s.Downgrade != nil, KindDowngrade)
	add(s.Expect != nil, KindExpect)
	add(s.Kill != "", KindKill)
	add(s.Restart != "", KindRestart)
	add(s.Partition != "", KindPartition)
	add(s.Heal != "", KindHeal)
	add(s.Freeze != "", KindFreeze)
	add(s.Thaw != "", KindThaw)
	add(s.Wait > 0, KindWait)
	add(s.Add != nil, KindAdd)
	add(s.Promote != "", KindPromote)
	add(s.Remove != "", KindRemove)
	add(s.Compact != nil, KindCompact)
	add(s.Defrag != "", KindDefrag)
	add(s.Refuse != nil, KindRefuse)
	add(s.Crash != nil, KindCrash)
	add(s.Snapshot != nil, KindSnapshot)
	return out
}

// Kind is what the step does ("" for a step that sets no action or several).
func (s Step) Kind() StepKind {
	if a := s.actions(); len(a) == 1 {
		return a[0]
	}
	return ""
}

// Target is the member (or role, or "all") a single-member step acts on.
func (s Step) Target() string {
	switch s.Kind() {
	case KindKill:
		return s.Kill
	case KindRestart:
		return s.Restart
	case KindPartition:
		return s.Partition
	case KindHeal:
		return s.Heal
	case KindFreeze:
		return s.Freeze
	case KindThaw:
		return s.Thaw
	case KindPromote:
		return s.Promote
	case KindRemove:
		return s.Remove
	case KindDefrag:
		return s.Defrag
	case KindCrash:
		return s.Crash.Member
	}
	return ""
}

// String is a one-line description of the step.
func (s Step) String() string {
	k := s.Kind()
	switch k {
	case KindReplace:
		who := "every member"
		if len(s.Replace.Members) > 0 {
			who = strings.Join(s.Replace.Members, ",")
		}
		if s.Replace.Order != "" {
			who += " (" + s.Replace.Order + ")"
		}
		return fmt.Sprintf("replace %s with %s", who, s.Replace.Version)
	case KindDowngrade:
		if s.Downgrade.Action == "cancel" {
			return "downgrade cancel"
		}
		return fmt.Sprintf("downgrade %s %s", s.Downgrade.Action, s.Downgrade.Version)
	case KindExpect:
		var parts []string
		e := s.Expect
		for _, kv := range [][2]string{{"cluster", e.Cluster}, {"storage", e.Storage}, {"server", e.Server}, {"log", e.Log}} {
			if kv[1] != "" {
				parts = append(parts, fmt.Sprintf("%s=%q", kv[0], kv[1]))
			}
		}
		return "expect " + strings.Join(parts, " ")
	case KindWait:
		return "wait " + time.Duration(s.Wait).String()
	case KindAdd:
		kind := "member"
		if s.Add.Learner {
			kind = "learner"
		}
		return fmt.Sprintf("add a %s at %s", kind, s.Add.Version)
	case KindCompact:
		if s.Compact.Physical {
			return "compact (physical)"
		}
		return "compact"
	case KindCrash:
		return fmt.Sprintf("crash %s at %s", s.Crash.Member, s.Crash.At)
	case KindSnapshot:
		return "snapshot on every member"
	case KindRefuse:
		if s.Refuse.Join {
			return fmt.Sprintf("refuse a new member at %s (%q)", s.Refuse.Version, s.Refuse.Error)
		}
		return fmt.Sprintf("refuse %s at %s (%q)", s.Refuse.Member, s.Refuse.Version, s.Refuse.Error)
	case "":
		return "?"
	}
	return string(k) + " " + s.Target()
}

// Numbered prints the plan's steps, one numbered line each, as a run announces them.
func (p *Plan) Numbered() string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan %s: %d members from %s", p.Name, p.Members, p.Start)
	if p.Seed != 0 {
		fmt.Fprintf(&b, " (seed %d)", p.Seed)
	}
	b.WriteByte('\n')
	for i, s := range p.Steps {
		fmt.Fprintf(&b, "%3d. %s\n", i+1, s)
	}
	return b.String()
}

// Uses reports whether any step is of kind k.
func (p *Plan) Uses(k StepKind) bool {
	for _, s := range p.Steps {
		if s.Kind() == k {
			return true
		}
	}
	return false
}
