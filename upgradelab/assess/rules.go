package assess

import (
	"fmt"
	"sort"
	"strings"

	"github.com/coreos/go-semver/semver"
	"github.com/dustin/go-humanize"

	"etcdx/upgradelab/releases"
)

// Verdict is how a finding bears on the path.
type Verdict string

// Verdicts, mildest first.
const (
	OK    Verdict = "ok"
	Warn  Verdict = "warn"
	Block Verdict = "block"
)

func (v Verdict) rank() int {
	switch v {
	case Block:
		return 2
	case Warn:
		return 1
	}
	return 0
}

// Finding is one judged observation.
type Finding struct {
	Check string `json:"check"`
	// Subject is a member's name or "cluster".
	Subject     string   `json:"subject"`
	Verdict     Verdict  `json:"verdict"`
	Summary     string   `json:"summary"`
	Consequence string   `json:"consequence,omitempty"`
	Fix         string   `json:"fix,omitempty"`
	Sources     []string `json:"sources,omitempty"`
	// PathHandled says the path (Report.Path) already takes care of it: a patch hop or the
	// minors in between. upgradelab guide goes ahead despite such a block, not despite others.
	PathHandled bool `json:"pathHandled,omitempty"`
}

// Unhandled are the blocking findings the path does not take care of.
func (r Report) Unhandled() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Verdict == Block && !f.PathHandled {
			out = append(out, f)
		}
	}
	return out
}

// Report is the answer for one cluster and one target.
type Report struct {
	Target   string         `json:"target"`
	Versions []string       `json:"versions"`
	Verdict  Verdict        `json:"verdict"`
	Findings []Finding      `json:"findings"`
	Path     []releases.Hop `json:"path"`
	// PathError says why no path could be planned ("" when one was).
	PathError string `json:"pathError,omitempty"`
}

// Sources of the checks that no blocker entry covers.
const (
	srcHealthy     = "https://etcd.io/docs/v3.7/upgrades/upgrade_3_7/#upgrade-requirements (the running cluster must be healthy)"
	srcQuota       = "https://etcd.io/docs/v3.6/op-guide/maintenance/#space-quota"
	srcDefrag      = "https://etcd.io/docs/v3.6/op-guide/maintenance/#defragmentation"
	srcDowngrade   = "https://etcd.io/docs/v3.6/downgrades/downgrading-etcd/"
	srcStorageVers = "https://etcd.io/docs/v3.6/upgrades/upgrade_3_6/ (the storage version follows the cluster version)"
)

// Thresholds of the space checks.
const (
	quotaWarnRatio = 0.8
	fragWarnRatio  = 0.5
	fragWarnBytes  = 64 << 20
	// learnerLagWarn is how far behind the leader a learner is reported as not caught up
	// (upstream refuses a promotion below 90% of the leader's progress).
	learnerLagWarn = 1000
)

// Evaluate judges the facts for a move to target.
func Evaluate(k *releases.Knowledge, f Facts, target *semver.Version) Report {
	r := Report{Target: target.String()}
	e := evaluation{k: k, f: f, target: target, r: &r}
	e.versions()
	e.reachable()
	e.minors()
	e.patches()
	e.membershipStores()
	e.v2Content()
	e.v2Entries()
	e.v2HealthReads()
	e.learners()
	e.alarms()
	e.space()
	e.downgrade()
	e.storageVersions()
	e.flags()
	sort.SliceStable(r.Findings, func(i, j int) bool { return r.Findings[i].Verdict.rank() > r.Findings[j].Verdict.rank() })
	r.Verdict = OK
	for _, fd := range r.Findings {
		if fd.Verdict.rank() > r.Verdict.rank() {
			r.Verdict = fd.Verdict
		}
	}
	return r
}

// evaluation carries one Evaluate call's inputs and what it has worked out.
type evaluation struct {
	k      *releases.Knowledge
	f      Facts
	target *semver.Version
	r      *Report
	// versionOf is each answering member's version, by name.
	versionOf map[string]*semver.Version
	low       *semver.Version
	// entered are the minors the path enters going up.
	entered map[string]bool
}

func (e *evaluation) add(fd Finding) { e.r.Findings = append(e.r.Findings, fd) }

// handledByPath marks the last finding as one the path takes care of.
func (e *evaluation) handledByPath() {
	e.r.Findings[len(e.r.Findings)-1].PathHandled = true
}

// fromBlocker is a finding whose consequence, fix and sources are the knowledge's.
func (e *evaluation) fromBlocker(check, subject string, v Verdict, summary string) {
	b, _ := e.k.Blocker(check)
	if b.Severity == string(Warn) && v == Block {
		v = Warn
	}
	e.add(Finding{Check: check, Subject: subject, Verdict: v, Summary: summary, Consequence: b.Consequence, Fix: b.Fix, Sources: b.Sources})
}

func (e *evaluation) versions() {
	e.versionOf = map[string]*semver.Version{}
	var all []*semver.Version
	for _, m := range e.f.Members {
		if m.Live == nil {
			continue
		}
		v, err := releases.ParseVersion(m.Live.Version)
		if err != nil {
			e.add(Finding{Check: "version", Subject: m.Name, Verdict: Block, Summary: fmt.Sprintf("reports version %q, which is no etcd release", m.Live.Version)})
			continue
		}
		e.versionOf[m.Name] = v
		all = append(all, v)
		e.r.Versions = append(e.r.Versions, v.String())
	}
	sort.Strings(e.r.Versions)
	e.entered = map[string]bool{}
	if len(all) == 0 {
		e.r.PathError = "no member reported its version"
		return
	}
	hops, err := e.k.Path(all, e.target)
	if err != nil {
		e.r.PathError = err.Error()
		e.add(Finding{Check: "path", Subject: "cluster", Verdict: Block, Summary: err.Error(),
			Fix:     "assess against a target on a known line, from members on known lines; a line the lab does not know is a line it cannot vouch for",
			Sources: []string{"upgradelab/releases/knowledge.yaml"}})
	}
	e.r.Path = hops
	e.low = all[0]
	for _, v := range all {
		if v.LessThan(*e.low) {
			e.low = v
		}
	}
	for _, h := range hops {
		if h.Kind == releases.HopUpgrade {
			e.entered[releases.MinorOf(h.To)] = true
		}
	}
}

func (e *evaluation) reachable() {
	var down []string
	for _, m := range e.f.Members {
		if m.Listed && m.Live == nil && m.DataDir == nil {
			down = append(down, m.Name)
		}
	}
	down = append(down, e.f.Unreachable...)
	if len(down) == 0 {
		e.add(Finding{Check: "health", Subject: "cluster", Verdict: OK, Summary: fmt.Sprintf("all %d listed members answered or were read from their data dirs", len(e.f.Members))})
		return
	}
	e.add(Finding{Check: "health", Subject: "cluster", Verdict: Block,
		Summary:     "did not answer: " + strings.Join(down, ", "),
		Consequence: "a rolling upgrade stops each member in turn; with one already down, stopping another may take quorum away",
		Fix:         "bring the member back (or remove it and add it again) and check `etcdctl endpoint health --cluster` before the upgrade",
		Sources:     []string{srcHealthy}})
}

func (e *evaluation) minors() {
	if e.low == nil {
		return
	}
	low, target := releases.MinorOf(e.low), releases.MinorOf(e.target)
	between := e.k.MinorsBetween(low, target)
	var high *semver.Version
	for _, v := range e.versionOf {
		if high == nil || high.LessThan(*v) {
			high = v
		}
	}
	switch {
	case len(e.k.MinorsBetween(low, releases.MinorOf(high))) > 1:
		e.fromBlocker("skipped-minor", "cluster", Block, fmt.Sprintf("members run %s and %s: more than one minor apart", e.low, high))
	case len(between) > 1:
		e.fromBlocker("skipped-minor", "cluster", Block, fmt.Sprintf("%s to %s skips %s: the path goes through each", e.low, e.target, strings.Join(between[:len(between)-1], ", ")))
		e.handledByPath()
	default:
		e.add(Finding{Check: "skipped-minor", Subject: "cluster", Verdict: OK, Summary: fmt.Sprintf("%s to %s skips no minor", e.low, e.target)})
	}
}

func (e *evaluation) patches() {
	if e.low == nil {
		return
	}
	found := false
	for _, m := range e.f.Members {
		v := e.versionOf[m.Name]
		if v == nil {
			continue
		}
		line, ok := e.k.Line(releases.MinorOf(v))
		if !ok || line.LeaveFrom == "" || !e.entered[e.k.Next(line.Minor)] {
			continue
		}
		if leave := semver.New(line.LeaveFrom); v.LessThan(*leave) {
			found = true
			e.fromBlocker("patch-below-leave", m.Name, Block, fmt.Sprintf("runs %s, below %s, the lowest %s patch that may move to %s", v, leave, line.Minor, e.k.Next(line.Minor)))
			e.handledByPath()
		}
	}
	if !found {
		e.add(Finding{Check: "patch-below-leave", Subject: "cluster", Verdict: OK, Summary: "every member is on a patch its line may be left from"})
	}
}

// affected are the members running a version the blocker affects, when the path enters the
// minor it breaks.
func (e *evaluation) affected(b releases.Blocker) []string {
	if b.Into != "" && !e.entered[b.Into] {
		return nil
	}
	var names []string
	for _, m := range e.f.Members {
		if v := e.versionOf[m.Name]; v != nil && b.Affects(v) {
			names = append(names, m.Name)
		}
	}
	return names
}

// perDataDir judges every member whose data dir was read (judge adds its findings and says
// whether it found the problem): how many were read, and whether any had it.
func (e *evaluation) perDataDir(judge func(m Member) bool) (checked int, found bool) {
	for _, m := range e.f.Members {
		if m.DataDir == nil {
			continue
		}
		checked++
		if judge(m) {
			found = true
		}
	}
	return checked, found
}

func (e *evaluation) membershipStores() {
	for _, c := range []struct {
		check, what string
		ids         func(*DataDir) []string
	}{
		{"learner-mismatch", "voters the v3 store still holds as learners", func(d *DataDir) []string { return d.Demoted }},
		{"zombie-members", "members removed from the v2 store but still in the v3 store", func(d *DataDir) []string { return d.Zombies }},
	} {
		b, _ := e.k.Blocker(c.check)
		if b.Into != "" && !e.entered[b.Into] {
			continue
		}
		checked, found := e.perDataDir(func(m Member) bool {
			ids := c.ids(m.DataDir)
			if len(ids) > 0 {
				e.fromBlocker(c.check, m.Name, Block, fmt.Sprintf("data dir %s: %s: %s", m.DataDir.Path, c.what, strings.Join(ids, ", ")))
			}
			return len(ids) > 0
		})
		switch {
		case found:
		case checked > 0:
			e.add(Finding{Check: c.check, Subject: "cluster", Verdict: OK, Summary: fmt.Sprintf("%d data dir(s) read: the v2 and v3 stores agree", checked)})
		case len(e.affected(b)) > 0:
			e.fromBlocker(c.check, "cluster", Warn, fmt.Sprintf("%s run %s, which can leave %s; no data dir was given to check",
				strings.Join(e.affected(b), ", "), rangesOf(b), c.what))
		}
	}
}

func (e *evaluation) v2Content() {
	b, _ := e.k.Blocker("v2-custom")
	if !e.entered[b.Into] {
		return
	}
	for _, m := range e.f.Members {
		if m.Flags["enable-v2"] == "true" {
			e.fromBlocker("v2-custom", m.Name, Warn, fmt.Sprintf("--enable-v2 is set (%s): the cluster may hold v2 data", m.FlagsFrom))
		}
	}
	checked, found := e.perDataDir(func(m Member) bool {
		err := m.DataDir.V2Custom.Err()
		if err != nil {
			e.fromBlocker("v2-custom", m.Name, Block, fmt.Sprintf("data dir %s: %v", m.DataDir.Path, err))
		}
		return err != nil
	})
	switch {
	case checked > 0 && !found:
		e.add(Finding{Check: "v2-custom", Subject: "cluster", Verdict: OK, Summary: fmt.Sprintf("%d data dir(s) read: no custom v2 content", checked)})
	case checked == 0:
		e.fromBlocker("v2-custom", "cluster", Warn, "not checked: no data dir was given (stop a member or copy its data dir, or run `etcdutl check v2store` on each)")
	}
}

// v2Entries: a path into 3.7 with members' WALs still holding 3.5's v2 requests.
func (e *evaluation) v2Entries() {
	b, _ := e.k.Blocker("v2-entries")
	if !e.entered[b.Into] {
		return
	}
	checked, found := e.perDataDir(func(m Member) bool {
		n := m.DataDir.V2Custom.Entries
		if n > 0 {
			e.fromBlocker("v2-entries", m.Name, Block, fmt.Sprintf("data dir %s: the WAL holds %d v2 request(s) after its newest snapshot", m.DataDir.Path, n))
		}
		return n > 0
	})
	switch {
	case checked > 0 && !found:
		e.add(Finding{Check: "v2-entries", Subject: "cluster", Verdict: OK, Summary: fmt.Sprintf("%d data dir(s) read: no v2 request left to replay", checked)})
	case checked == 0 && len(e.affected(b)) > 0:
		e.fromBlocker("v2-entries", "cluster", Warn, fmt.Sprintf("%s run %s: after the 3.6 hop, every member must save a snapshot before any moves to 3.7 (upgradelab guide waits for it; a written plan has the step)",
			strings.Join(e.affected(b), ", "), rangesOf(b)))
	}
}

// v2HealthReads: a path from 3.4 into 3.6, with the v2 reads 3.4's /health commits in every
// member's WAL (a data dir that holds them is a v2-custom block: 3.6 refuses them).
func (e *evaluation) v2HealthReads() {
	b, _ := e.k.Blocker("v2-health-reads")
	if names := e.affected(b); len(names) > 0 {
		e.fromBlocker(b.Check, "cluster", Warn, fmt.Sprintf("%s run %s: after the 3.5 hop, every member must save a snapshot before any moves to 3.6 (upgradelab guide waits for it; a written plan has the step)",
			strings.Join(names, ", "), rangesOf(b)))
	}
}

func (e *evaluation) learners() {
	var leaderIndex uint64
	for _, m := range e.f.Members {
		if m.Live != nil && m.Live.Leader {
			leaderIndex = m.Live.RaftIndex
		}
	}
	b, _ := e.k.Blocker("learner-present")
	for _, m := range e.f.Members {
		if !m.Learner {
			continue
		}
		summary := "is a learner"
		if m.Live != nil && leaderIndex > 0 {
			lag := int64(leaderIndex) - int64(m.Live.AppliedIndex)
			summary = fmt.Sprintf("is a learner, %d raft entries behind the leader", max(lag, 0))
			if lag > learnerLagWarn {
				summary += " (not caught up: a promotion is refused until it is)"
			}
		}
		if v := e.versionOf[m.Name]; v != nil && b.Affects(v) {
			summary += fmt.Sprintf("; %s is a patch whose member update promotes a learner", v)
		}
		e.fromBlocker("learner-present", m.Name, Warn, summary+": promote it (once caught up) or remove it before the upgrade, so every step knows its voters")
	}
}

func (e *evaluation) alarms() {
	if len(e.f.Alarms) == 0 {
		e.add(Finding{Check: "alarms", Subject: "cluster", Verdict: OK, Summary: "no alarm raised"})
		return
	}
	for _, a := range e.f.Alarms {
		fd := Finding{Check: "alarms", Subject: a.Member, Verdict: Block, Summary: "alarm " + a.Type + " raised", Sources: []string{srcQuota}}
		switch a.Type {
		case "NOSPACE":
			fd.Consequence = "the cluster takes only reads and deletes; an upgrade step that writes (the cluster version, the storage version) cannot commit"
			fd.Fix = "compact, defragment every member, raise --quota-backend-bytes if needed, then `etcdctl alarm disarm`"
		case "CORRUPT":
			fd.Consequence = "a member's data differs from the others'; upgrading carries the divergence along"
			fd.Fix = "find the corrupt member (etcdctl endpoint hashkv --cluster), replace it from a healthy member's snapshot, then disarm"
		default:
			fd.Fix = "resolve what raised it, then `etcdctl alarm disarm`"
		}
		e.add(fd)
	}
}

func (e *evaluation) space() {
	for _, m := range e.f.Members {
		l := m.Live
		if l == nil || l.DBSize == 0 {
			continue
		}
		if l.Quota > 0 && float64(l.DBSize) >= quotaWarnRatio*float64(l.Quota) {
			e.add(Finding{Check: "quota", Subject: m.Name, Verdict: Warn,
				Summary:     fmt.Sprintf("database %s of a %s quota (%.0f%%)", humanize.IBytes(uint64(l.DBSize)), humanize.IBytes(uint64(l.Quota)), 100*float64(l.DBSize)/float64(l.Quota)),
				Consequence: "near the quota a NOSPACE alarm stops writes, in the middle of the upgrade as well",
				Fix:         "compact and defragment before the upgrade, or raise --quota-backend-bytes on every member",
				Sources:     []string{srcQuota}})
		}
		if free := l.DBSize - l.DBSizeInUse; free >= fragWarnBytes && float64(free) >= fragWarnRatio*float64(l.DBSize) {
			e.add(Finding{Check: "fragmentation", Subject: m.Name, Verdict: Warn,
				Summary:     fmt.Sprintf("%s of its %s database is free pages", humanize.IBytes(uint64(free)), humanize.IBytes(uint64(l.DBSize))),
				Consequence: "every restart of the upgrade reads the whole file, and snapshots sent to a replacement member carry the free pages",
				Fix:         "`etcdctl defrag` one member at a time before the upgrade",
				Sources:     []string{srcDefrag}})
		}
	}
}

func (e *evaluation) downgrade() {
	if e.f.Downgrade == nil {
		return
	}
	e.add(Finding{Check: "downgrade", Subject: "cluster", Verdict: Block,
		Summary:     "a downgrade to " + e.f.Downgrade.Target + " is enabled",
		Consequence: "members at a newer minor than the target are refused while it is enabled, and the cluster and storage versions are being lowered",
		Fix:         "finish it (swap every binary to " + e.f.Downgrade.Target + ") or `etcdctl downgrade cancel` before planning an upgrade",
		Sources:     []string{srcDowngrade}})
}

func (e *evaluation) storageVersions() {
	cluster := e.f.ClusterVersion
	if cluster == "" {
		return
	}
	cv, err := releases.ParseVersion(cluster)
	if err != nil {
		return
	}
	for _, m := range e.f.Members {
		if m.Live == nil || m.Live.StorageVersion == "" {
			continue
		}
		sv, err := releases.ParseVersion(m.Live.StorageVersion)
		if err != nil || releases.MinorOf(sv) == releases.MinorOf(cv) {
			continue
		}
		e.add(Finding{Check: "storage-version", Subject: m.Name, Verdict: Warn,
			Summary:     fmt.Sprintf("storage version %s, cluster version %s", sv, cv),
			Consequence: "the storage version follows the cluster version; a difference means a migration has not finished (or a downgrade is under way)",
			Fix:         "wait until they agree (the leader migrates within --downgrade-check-time); if they never do, look for a member that is not applying",
			Sources:     []string{srcStorageVers}})
	}
}

func (e *evaluation) flags() {
	minors := make([]string, 0, len(e.entered))
	for m := range e.entered {
		minors = append(minors, m)
	}
	sort.Strings(minors)
	for _, m := range e.f.Members {
		if m.Flags == nil {
			continue
		}
		var refused []string
		names := make([]string, 0, len(m.Flags))
		for name := range m.Flags {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, minor := range minors {
			for _, name := range names {
				fc, ok := e.k.RemovedFlag(minor, name)
				if !ok {
					continue
				}
				fix := "remove it"
				if fc.Replacement != "" {
					fix = "replace it with --" + fc.Replacement
				}
				if fc.Note != "" {
					fix += " (" + fc.Note + ")"
				}
				refused = append(refused, name)
				e.add(Finding{Check: "flags", Subject: m.Name, Verdict: Block,
					Summary:     fmt.Sprintf("--%s (%s) is refused by %s", name, m.FlagsFrom, minor),
					Consequence: "the member does not start on " + minor + " with it",
					Fix:         fix + " before the member moves to " + minor,
					Sources:     []string{e.k.Flags.Sources[minor]}})
			}
		}
		if len(refused) == 0 {
			e.add(Finding{Check: "flags", Subject: m.Name, Verdict: OK, Summary: fmt.Sprintf("%d flags (%s): none refused on the way", len(names), m.FlagsFrom)})
		}
	}
}

func rangesOf(b releases.Blocker) string {
	var parts []string
	for _, r := range b.Affected {
		parts = append(parts, r.From+" to "+r.To)
	}
	return strings.Join(parts, " or ")
}
