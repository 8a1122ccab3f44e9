package plan

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

var (
	level = regexp.MustCompile(`^3\.[0-9]+$`)
	// subject is a level (3.6), a full version (3.5.35) or a named binary such as
	// upstream-3.5.35.
	subject = regexp.MustCompile(`^(3\.[0-9]+(\.[0-9]+)?|[a-z][a-z0-9.-]*)$`)
)

const subjectHelp = "a level like 3.6, a version like 3.5.35 or a binary's name like upstream-3.5.35"

// Validate checks the plan for a cluster of members (names m1..mN, then m<N+1>... for the
// members steps add).
func (p *Plan) Validate() error {
	if p.Name == "" {
		return errors.New("plan has no name")
	}
	if p.Members < 1 || p.Members > 7 {
		return fmt.Errorf("plan %s: members must be 1 to 7, got %d", p.Name, p.Members)
	}
	if !subject.MatchString(p.Start) {
		return fmt.Errorf("plan %s: start %q is not %s", p.Name, p.Start, subjectHelp)
	}
	if len(p.Steps) == 0 {
		return fmt.Errorf("plan %s: no steps", p.Name)
	}
	if p.Thresholds.MaxStall < 0 || p.Thresholds.MaxFailed < 0 {
		return fmt.Errorf("plan %s: thresholds must not be negative", p.Name)
	}
	v := validator{members: map[string]bool{}, next: p.Members + 1}
	for i := 1; i <= p.Members; i++ {
		v.members[fmt.Sprintf("m%d", i)] = true
	}
	for i, s := range p.Steps {
		if err := v.step(s); err != nil {
			return fmt.Errorf("plan %s: step %d: %w", p.Name, i+1, err)
		}
	}
	return nil
}

// validator follows the membership through the steps, so a step may name a member an
// earlier step added and may not name one an earlier step removed.
type validator struct {
	members map[string]bool
	next    int
	// roleRemoved is set once a member chosen at run time was removed: later names cannot
	// be checked.
	roleRemoved bool
}

func (v *validator) member(name string, extra ...string) error {
	for _, e := range extra {
		if name == e {
			return nil
		}
	}
	if v.members[name] || v.roleRemoved {
		return nil
	}
	var have []string
	for i := 1; i < v.next; i++ {
		if n := fmt.Sprintf("m%d", i); v.members[n] {
			have = append(have, n)
		}
	}
	also := ""
	if len(extra) > 0 {
		also = " or " + strings.Join(extra, ", ")
	}
	return fmt.Errorf("no member %q (members here are %s%s)", name, strings.Join(have, ", "), also)
}

// failpointName is the shape of upstream's gofail names (raftBeforeSave, defragBeforeRename).
var failpointName = regexp.MustCompile(`^[a-z][A-Za-z]*$`)

func checkSubject(what, v string) error {
	if !subject.MatchString(v) {
		return fmt.Errorf("%s: version %q is not %s", what, v, subjectHelp)
	}
	return nil
}

func (v *validator) step(s Step) error {
	if a := s.actions(); len(a) != 1 {
		var names []string
		for _, k := range Kinds {
			names = append(names, string(k))
		}
		return fmt.Errorf("a step must be exactly one of %s", strings.Join(names, ", "))
	}
	if s.MaxStall < 0 {
		return errors.New("maxStall must not be negative")
	}
	switch s.Kind() {
	case KindReplace:
		if err := checkSubject("replace", s.Replace.Version); err != nil {
			return err
		}
		for _, m := range s.Replace.Members {
			if err := v.member(m, TargetLeader); err != nil {
				return fmt.Errorf("replace: %w", err)
			}
		}
		switch s.Replace.Order {
		case "", OrderLeaderFirst, OrderLeaderLast:
		default:
			return fmt.Errorf("replace: order %q must be %s or %s", s.Replace.Order, OrderLeaderFirst, OrderLeaderLast)
		}
	case KindDowngrade:
		switch s.Downgrade.Action {
		case "validate", "enable", "cancel":
		default:
			return fmt.Errorf("downgrade: action %q must be validate, enable or cancel", s.Downgrade.Action)
		}
		if s.Downgrade.Action != "cancel" && !level.MatchString(s.Downgrade.Version) {
			return fmt.Errorf("downgrade: version %q is not a level like 3.5", s.Downgrade.Version)
		}
	case KindExpect:
		e := s.Expect
		if e.Cluster == "" && e.Storage == "" && e.Server == "" && e.Log == "" {
			return errors.New("expect: nothing to expect (cluster, storage, server or log)")
		}
		for _, l := range []string{e.Cluster, e.Storage, e.Server} {
			if l != "" && !level.MatchString(l) {
				return fmt.Errorf("expect: %q is not a level like 3.6", l)
			}
		}
	case KindKill, KindPartition, KindFreeze:
		return v.member(s.Target(), TargetLeader, TargetFollower)
	case KindCrash:
		if !failpointName.MatchString(s.Crash.At) {
			return fmt.Errorf("crash: at %q is not a failpoint name (e.g. raftBeforeSave; docs/operations.md lists them)", s.Crash.At)
		}
		return v.member(s.Crash.Member, TargetLeader, TargetFollower)
	case KindSnapshot:
		if s.Snapshot.MaxEntries < 0 {
			return fmt.Errorf("snapshot: maxEntries %d is negative", s.Snapshot.MaxEntries)
		}
	case KindRestart, KindHeal, KindThaw, KindDefrag:
		return v.member(s.Target(), TargetAll)
	case KindPromote:
		return v.member(s.Promote)
	case KindRemove:
		if err := v.member(s.Remove, TargetLeader, TargetFollower); err != nil {
			return err
		}
		if s.Remove == TargetLeader || s.Remove == TargetFollower {
			v.roleRemoved = true
		}
		delete(v.members, s.Remove)
		if len(v.members) == 0 && !v.roleRemoved {
			return errors.New("remove: that would remove the last member")
		}
	case KindAdd:
		if err := checkSubject("add", s.Add.Version); err != nil {
			return err
		}
		v.members[fmt.Sprintf("m%d", v.next)] = true
		v.next++
	case KindRefuse:
		r := s.Refuse
		if err := checkSubject("refuse", r.Version); err != nil {
			return err
		}
		if r.Error == "" {
			return errors.New("refuse: give the error text the refused member must log")
		}
		if r.Join == (r.Member != "") {
			return errors.New("refuse: give either member (a replace that must be refused) or join: true")
		}
		if !r.Join {
			return v.member(r.Member)
		}
	}
	return nil
}
