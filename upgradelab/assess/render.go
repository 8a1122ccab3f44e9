package assess

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/dustin/go-humanize"

	"etcdx/upgradelab/releases"
)

// WriteText prints the facts and the report for an operator: the members, the findings worst
// first with what each means and what to do, and the path as numbered steps.
func WriteText(w io.Writer, f Facts, r Report) error {
	versions := strings.Join(slices.Compact(slices.Clone(r.Versions)), ", ")
	if versions == "" {
		versions = "unknown versions"
	}
	fmt.Fprintf(w, "Assessment: %d members at %s, to %s: %s\n\n", len(f.Members), versions, r.Target, strings.ToUpper(string(r.Verdict)))

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tID\tROLE\tVERSION\tSTORAGE\tDB SIZE\tIN USE\tQUOTA\tSOURCES")
	for _, m := range f.Members {
		role, version, storage, size, inUse, quota := "voter", "-", "-", "-", "-", "-"
		if m.Learner {
			role = "learner"
		}
		var sources []string
		if l := m.Live; l != nil {
			if l.Leader {
				role = "leader"
			}
			version, storage = l.Version, orDash(l.StorageVersion)
			size, inUse = humanize.IBytes(uint64(l.DBSize)), humanize.IBytes(uint64(l.DBSizeInUse))
			if l.Quota > 0 {
				quota = humanize.IBytes(uint64(l.Quota))
			}
			sources = append(sources, "live "+l.Endpoint)
		}
		if d := m.DataDir; d != nil {
			if storage == "-" {
				storage = d.StorageVersion
			}
			if size == "-" {
				size = humanize.IBytes(uint64(d.DBSize))
			}
			sources = append(sources, "data dir "+d.Path)
		}
		if m.FlagsFrom != "" {
			sources = append(sources, m.FlagsFrom)
		}
		if !m.Listed {
			role = "not listed"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, orDash(m.ID), role, version, storage, size, inUse, quota,
			orDash(strings.Join(sources, "; ")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	downgrade := "none"
	if f.Downgrade != nil {
		downgrade = "enabled, to " + f.Downgrade.Target
	}
	fmt.Fprintf(w, "Cluster version %s; downgrade %s; %d alarm(s)\n", orDash(f.ClusterVersion), downgrade, len(f.Alarms))

	fmt.Fprintf(w, "\nFindings, worst first:\n")
	for _, fd := range r.Findings {
		fmt.Fprintf(w, "  %-5s  %s (%s): %s\n", strings.ToUpper(string(fd.Verdict)), fd.Check, fd.Subject, fd.Summary)
		if fd.Verdict == OK {
			continue
		}
		if fd.Consequence != "" {
			fmt.Fprintf(w, "         why it matters: %s\n", fd.Consequence)
		}
		fmt.Fprintf(w, "         what to do: %s\n", fd.Fix)
		for _, s := range fd.Sources {
			fmt.Fprintf(w, "         source: %s\n", s)
		}
	}

	fmt.Fprintf(w, "\nPath to %s:\n", r.Target)
	switch {
	case r.PathError != "":
		fmt.Fprintf(w, "  none: %s\n", r.PathError)
	case len(r.Path) == 0:
		fmt.Fprintf(w, "  nothing to do: every member runs %s\n", r.Target)
	}
	for i, h := range r.Path {
		fmt.Fprintf(w, "  %d. %s\n", i+1, HopText(h))
	}
	return nil
}

// HopText says what an operator does for a hop.
func HopText(h releases.Hop) string {
	from := strings.Join(h.From, ", ")
	switch h.Kind {
	case releases.HopDowngrade:
		return fmt.Sprintf("Downgrade %s -> %s (%s): `etcdctl downgrade validate %s`, `etcdctl downgrade enable %s`, wait until every member reports storage version %s, then replace each member's binary with %s, one at a time.",
			from, h.To, h.Why, releases.MinorOf(h.To), releases.MinorOf(h.To), releases.MinorOf(h.To), h.To)
	case releases.HopPatch:
		return fmt.Sprintf("Patch %s -> %s (%s): replace each member's binary with %s, one at a time, the leader last; wait until each is healthy and caught up before the next.", from, h.To, h.Why, h.To)
	}
	return fmt.Sprintf("Upgrade %s -> %s (%s): replace each member's binary with %s, one at a time, the leader last (or add a learner at %s, promote it, remove an old member); the cluster version moves to %s once every member runs it.",
		from, h.To, h.Why, h.To, h.To, releases.MinorOf(h.To))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
