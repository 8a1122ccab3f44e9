package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"etcdx/e2e/kubeload"
)

// series is one quantity sampled per window, over a side's three members.
type series struct {
	name, unit string
	of         func(sample) float64
}

func sumOf(f func(memberReading) int64) func(sample) float64 {
	return func(s sample) float64 {
		t := 0.0
		for _, m := range s.Members {
			t += float64(f(m))
		}
		return t
	}
}

func maxOf(f func(memberReading) int64) func(sample) float64 {
	return func(s sample) float64 {
		x := 0.0
		for _, m := range s.Members {
			x = math.Max(x, float64(f(m)))
		}
		return x
	}
}

const mib = 1 << 20

var allSeries = []series{
	{"resident memory (sum of members)", "MiB", func(s sample) float64 { return sumOf(func(m memberReading) int64 { return m.RSS })(s) / mib }},
	{"goroutines (sum)", "", sumOf(func(m memberReading) int64 { return m.Goroutines })},
	{"open files (sum)", "", sumOf(func(m memberReading) int64 { return m.FDs })},
	{"database size (largest member)", "MiB", func(s sample) float64 { return maxOf(func(m memberReading) int64 { return m.DBSize })(s) / mib }},
	{"database in use (largest member)", "MiB", func(s sample) float64 { return maxOf(func(m memberReading) int64 { return m.DBInUse })(s) / mib }},
	{"WAL files (most on a member)", "", maxOf(func(m memberReading) int64 { return m.WALFiles })},
	{"snapshot files (most on a member)", "", maxOf(func(m memberReading) int64 { return m.SnapFiles })},
	{"mutating p99 of the window", "ms", func(s sample) float64 {
		return float64(s.Load.Classes[kubeload.Mutating].P99) / float64(time.Millisecond)
	}},
}

// growthThreshold is the growth per hour, relative to the series' mean, above which a series
// counts as growing.
const growthThreshold = 0.05

const verdictGrows = "grows where upstream's does not"

// judgedOver is the shortest stretch a slope is judged on: over less, warm-up and a single
// defrag or compaction decide the fit.
const judgedOver = 20 * time.Minute

// slope is the Theil-Sen slope per hour (the median of the slopes between every pair of
// samples) of the series over the samples from the last half hour (the last half of a run
// shorter than an hour), and the mean there. The median is not swung by one window as a
// least-squares fit is: every member is defragmented every 20 minutes, and upstream's one window
// of 986 ms among 15 ms ones gave its mutating p99 a least-squares slope of -97 ms an hour
// (2026-12-06), which made a p99 that rose on both sides look like ours' alone.
func slope(ss []sample, of func(sample) float64, runFor time.Duration) (perHour, mean float64) {
	from := runFor - 30*time.Minute
	if runFor < time.Hour {
		from = runFor / 2
	}
	var xs, ys []float64
	for _, s := range ss {
		if s.At >= from {
			xs = append(xs, s.At.Hours())
			ys = append(ys, of(s))
		}
	}
	return theilSen(xs, ys), stat.Mean(ys, nil)
}

// theilSen is the median of the slopes between every pair of points with distinct xs (0 for
// fewer than two).
func theilSen(xs, ys []float64) float64 {
	var slopes []float64
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			if dx := xs[j] - xs[i]; dx != 0 {
				slopes = append(slopes, (ys[j]-ys[i])/dx)
			}
		}
	}
	if len(slopes) == 0 {
		return 0
	}
	slices.Sort(slopes)
	n := len(slopes)
	if n%2 == 1 {
		return slopes[n/2]
	}
	return (slopes[n/2-1] + slopes[n/2]) / 2
}

func relative(perHour, mean float64) float64 {
	if mean == 0 {
		return 0
	}
	return perHour / mean
}

// newReport judges a soak's record: each series' slope over the last half hour on both sides.
// out and plot are where the report and its plot go (the report links to the plot).
func newReport(r record, out, plotPath string) string {
	var b strings.Builder
	ours, up := r.Sides[0], r.Sides[1]
	took := r.Took
	fmt.Fprintf(&b, "# Soak: a Kubernetes-shaped load for %v, ours beside upstream\n\n", took.Round(time.Minute))
	fmt.Fprintf(&b, "Run by `make soak HOURS=%g` on %s: %d CPUs, %s, our server built at %s. Three members of ours and three of %s at once on this\n", r.Hours, r.Date, runtime.NumCPU(), runtime.Version(), r.OursBuiltAt, up.Label)
	fmt.Fprintf(&b, "machine, each under the Kubernetes-shaped load of docs/performance.md's kube part (e2e/kubeload) at N = %d nodes, members\n", r.Nodes)
	fmt.Fprintf(&b, "with %s; the load compacts every %v as kube-apiserver does, and every member is defragmented, one at a time, every %v.\n", strings.Join(kubeload.MemberFlags, " "), r.Compaction, r.DefragEvery)
	fmt.Fprintf(&b, "Every %v each member is sampled. The slope of each series is the median of the slopes between its samples (Theil-Sen) over the last half hour, per hour;\n", r.Sample)
	fmt.Fprintf(&b, "a series grows when its slope is above %.0f%% of its mean per hour. The plot (%s) shows every series on both sides.\n\n", growthThreshold*100, relativeTo(out, plotPath))
	fmt.Fprintf(&b, "| series | ours at the end | ours slope per hour | upstream at the end | upstream slope per hour | verdict |\n|---|---|---|---|---|---|\n")
	last := func(sd recordSide, sr series) float64 {
		if len(sd.Samples) == 0 {
			return 0
		}
		return sr.of(sd.Samples[len(sd.Samples)-1])
	}
	for _, sr := range allSeries {
		oSlope, oMean := slope(ours.Samples, sr.of, took)
		uSlope, uMean := slope(up.Samples, sr.of, took)
		or, ur := relative(oSlope, oMean), relative(uSlope, uMean)
		verdict := "flat"
		switch {
		case took-max(took-30*time.Minute, took/2) < judgedOver:
			verdict = fmt.Sprintf("not judged: the fit covers less than %v", judgedOver)
		case or > growthThreshold && ur <= growthThreshold:
			verdict = "**" + verdictGrows + "**"
		case or > growthThreshold:
			verdict = "grows on both sides"
		case ur > growthThreshold:
			verdict = "upstream's grows, ours does not"
		}
		fmt.Fprintf(&b, "| %s | %.1f %s | %+.2f (%+.1f%%) | %.1f %s | %+.2f (%+.1f%%) | %s |\n", sr.name, last(ours, sr), sr.unit, oSlope, 100*or, last(up, sr), sr.unit, uSlope, 100*ur, verdict)
	}
	missed := func(sd recordSide) int {
		n := 0
		for _, s := range sd.Samples {
			if ok, _ := s.Load.Holds(kubeload.KubernetesSLO); !ok {
				n++
			}
		}
		return n
	}
	fmt.Fprintf(&b, "\nWindows that missed an SLO: ours %d of %d, upstream %d of %d.\n", missed(ours), len(ours.Samples), missed(up), len(up.Samples))
	return b.String()
}

// writePlot draws every series, both sides, one panel each, into a PNG.
func writePlot(path string, sides []recordSide) error {
	const cols = 2
	rows := (len(allSeries) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	colours := []color.Color{color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}}
	for i, sr := range allSeries {
		p := plot.New()
		p.Title.Text = sr.name
		p.X.Label.Text = "minutes"
		p.Y.Label.Text = sr.unit
		for k, sd := range sides {
			xys := make(plotter.XYs, len(sd.Samples))
			for j, s := range sd.Samples {
				xys[j] = plotter.XY{X: s.At.Minutes(), Y: sr.of(s)}
			}
			l, err := plotter.NewLine(xys)
			if err != nil {
				return err
			}
			l.Color = colours[k%len(colours)]
			p.Add(l)
			p.Legend.Add(sd.Label, l)
		}
		p.Legend.Top = true
		if plots[i/cols] == nil {
			plots[i/cols] = make([]*plot.Plot, cols)
		}
		plots[i/cols][i%cols] = p
	}
	img := vgimg.New(vg.Points(900), vg.Points(260*float64(rows)))
	dc := draw.New(img)
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	canvases := plot.Align(plots, t, dc)
	for j := range plots {
		for i := range plots[j] {
			if plots[j][i] != nil {
				plots[j][i].Draw(canvases[j][i])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return err
}

// builtAt is the Git SHA a binary of ours reports in --version ("unknown" if it says none).
func builtAt(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(out), "\n") {
		if sha, ok := strings.CutPrefix(line, "Git SHA: "); ok {
			return strings.TrimSpace(sha)
		}
	}
	return "unknown"
}

// relativeTo is path as a link from the report at report (the plot sits beside it).
func relativeTo(report, path string) string {
	if rel, err := filepath.Rel(filepath.Dir(report), path); err == nil {
		return rel
	}
	return path
}
