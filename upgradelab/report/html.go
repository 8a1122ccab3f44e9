package report

import (
	"bytes"
	"fmt"
	"html/template"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"etcdx/upgradelab/lab"
	"etcdx/upgradelab/plan"
	"etcdx/upgradelab/workload"
)

// The HTML report is one self-contained page per run (inline CSS and SVG, no scripts, nothing
// fetched), and a summary page for a matrix with its subject sets side by side.

// geometry of the run page's drawings
const (
	chartW  = 1000.0 // width of the time axis
	labelW  = 110.0  // room left of it for lane names
	laneH   = 34.0
	chartH  = 110.0
	padTop  = 26.0
	padDown = 22.0
)

// faultKinds are the steps marked as faults on the timeline.
var faultKinds = map[plan.StepKind]bool{plan.KindKill: true, plan.KindFreeze: true, plan.KindPartition: true,
	plan.KindRestart: true, plan.KindThaw: true, plan.KindHeal: true, plan.KindRemove: true}

// palette colours binaries in the order they appear in a run.
var palette = []string{"#4e79a7", "#59a14f", "#9c755f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#bab0ac"}

type axis struct{ from, to time.Time }

func (a axis) x(t time.Time) float64 {
	span := a.to.Sub(a.from)
	if span <= 0 {
		return labelW
	}
	f := float64(t.Sub(a.from)) / float64(span)
	return labelW + max(0, min(1, f))*chartW
}

type svg struct{ b strings.Builder }

func (s *svg) f(format string, args ...any) { fmt.Fprintf(&s.b, format, args...) }

// text writes escaped text at x, y.
func (s *svg) text(x, y float64, class, txt string) {
	s.f(`<text x="%.1f" y="%.1f" class="%s">%s</text>`, x, y, class, template.HTMLEscapeString(txt))
}

func (s *svg) html() template.HTML { return template.HTML(s.b.String()) } // built from escaped parts only

// timeline draws a lane per member (binary by colour, state by pattern, the versions the
// member reported) under numbered step bands, faults in red.
func timeline(r lab.Report, ax axis) template.HTML {
	lanes := map[string][]lab.MemberState{}
	var order []string
	for _, s := range r.Timeline.States {
		if _, ok := lanes[s.Member]; !ok {
			order = append(order, s.Member)
		}
		lanes[s.Member] = append(lanes[s.Member], s)
	}
	colour := map[string]string{}
	for _, s := range r.Timeline.States {
		if _, ok := colour[s.Binary]; !ok {
			colour[s.Binary] = palette[len(colour)%len(palette)]
		}
	}
	h := padTop + float64(len(order))*laneH + padDown
	var s svg
	s.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" class="timeline">`, labelW+chartW+10, h)
	s.f(`<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="3" height="6" fill="#fff" opacity="0.6"/></pattern></defs>`)
	steps(&s, r, ax, h)
	for i, name := range order {
		y := padTop + float64(i)*laneH
		s.text(4, y+laneH/2+4, "lane", name)
		states := lanes[name]
		for j, st := range states {
			end := r.EndedAt
			if j+1 < len(states) {
				end = states[j+1].At
			}
			if st.State == "removed" {
				continue
			}
			x0, x1 := ax.x(st.At), ax.x(end)
			fill, opacity := colour[st.Binary], "1"
			if st.State == "stopped" {
				fill, opacity = "#ccc", "1"
			}
			s.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" opacity="%s"><title>%s</title></rect>`,
				x0, y+3, max(1, x1-x0), laneH-16, fill, opacity, template.HTMLEscapeString(fmt.Sprintf("%s: %s, %s from %s", name, st.Binary, st.State, st.At.Format("15:04:05.000"))))
			switch st.State {
			case "frozen", "partitioned":
				s.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="url(#hatch)"/>`, x0, y+3, max(1, x1-x0), laneH-16)
				s.text(x0+3, y+14, "state", st.State)
			default:
				if x1-x0 > 40 {
					s.text(x0+3, y+14, "bin", st.Binary)
				}
			}
		}
		// What the member said of its versions, at each change; labelled where there is room.
		var said []lab.VersionSample
		for _, v := range r.Timeline.Versions {
			if v.Member == name {
				said = append(said, v)
			}
		}
		for k, v := range said {
			x, room := ax.x(v.At), labelW+chartW-ax.x(v.At)
			if k+1 < len(said) {
				room = ax.x(said[k+1].At) - x
			}
			label := "no answer"
			if v.Answered {
				label = "cluster " + v.Cluster
				if v.Storage != "" {
					label += ", storage " + v.Storage
				}
			}
			s.f(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" class="tick"><title>%s</title></line>`, x, x, y+laneH-13, y+laneH-4,
				template.HTMLEscapeString(v.At.Format("15:04:05.000")+" "+label))
			if room > 5.5*float64(len(label)) {
				s.text(x+2, y+laneH-4, "ver", label)
			}
		}
	}
	timeAxis(&s, ax, h-6)
	s.f(`</svg>`)
	return s.html()
}

// timeAxis labels seconds since the run began along y.
func timeAxis(s *svg, ax axis, y float64) {
	span := ax.to.Sub(ax.from)
	step := time.Second
	for _, d := range []time.Duration{2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute} {
		if span/step <= 12 {
			break
		}
		step = d
	}
	for t := time.Duration(0); t <= span; t += step {
		x := ax.x(ax.from.Add(t))
		s.text(x, y, "unit", fmt.Sprintf("+%v", t))
	}
}

// steps draws the run's steps as numbered bands across height h.
func steps(s *svg, r lab.Report, ax axis, h float64) {
	for i, st := range r.Steps {
		x0, x1 := ax.x(st.StartedAt), ax.x(st.StartedAt.Add(st.Duration))
		class := "band"
		if i%2 == 1 {
			class = "band odd"
		}
		if st.Error != "" {
			class = "band failed"
		}
		s.f(`<rect x="%.1f" y="0" width="%.1f" height="%.1f" class="%s"><title>%s</title></rect>`,
			x0, max(1, x1-x0), h, class, template.HTMLEscapeString(fmt.Sprintf("%d. %s (%.1fs)", i+1, st.Step, st.Duration.Seconds())))
		lc := "num"
		if faultKinds[st.Kind] {
			lc = "num fault"
		}
		s.text(x0+2, 12, lc, fmt.Sprint(i+1))
	}
}

// idle greys out the parts of the run the workload did not cover (the cluster starting, and
// the checks after the workload stopped), so a chart that ends early does not read as a drop.
func idle(s *svg, r lab.Report, ax axis, h float64) {
	end := r.WorkloadStart.Add(time.Duration(len(r.Series)) * time.Second)
	if r.WorkloadStart.IsZero() {
		end = r.StartedAt
	}
	for _, span := range [][2]time.Time{{r.StartedAt, r.WorkloadStart}, {end, r.EndedAt}} {
		x0, x1 := ax.x(span[0]), ax.x(span[1])
		if x1-x0 < 1 {
			continue
		}
		s.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" class="idle"><title>no workload: %s</title></rect>`,
			x0, padTop, x1-x0, chartH, idleWhy(span[0] == r.StartedAt))
		if x1-x0 > 90 {
			s.text(x0+4, padTop+chartH-6, "unit", "no workload")
		}
	}
}

func idleWhy(before bool) string {
	if before {
		return "the cluster is starting"
	}
	return "the workload stopped; the run checks the history, the ledger and the members"
}

// chart draws one quantity of the per-second series as a line (or several), on the same time
// axis as the timeline.
func chart(r lab.Report, ax axis, title, unit string, lines map[string]func(workload.Point) float64, colours map[string]string) template.HTML {
	top := 0.0
	for _, p := range r.Series {
		for _, v := range lines {
			top = max(top, v(p))
		}
	}
	label := fmt.Sprintf("max %.0f %s", top, unit)
	if top == 0 {
		label, top = "none: 0 "+unit, 1 // the scale needs a height; the label says what was seen
	}
	h := padTop + chartH + padDown
	var s svg
	s.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" class="chart">`, labelW+chartW+10, h)
	steps(&s, r, ax, h)
	idle(&s, r, ax, h)
	s.text(4, padTop+12, "lane", title)
	s.text(4, padTop+28, "unit", label)
	s.f(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" class="axis"/>`, labelW, labelW+chartW, padTop+chartH, padTop+chartH)
	names := make([]string, 0, len(lines))
	for n := range lines {
		names = append(names, n)
	}
	sort.Strings(names)
	for k, n := range names {
		var pts []string
		for _, p := range r.Series {
			t := r.WorkloadStart.Add(time.Duration(p.T*float64(time.Second)) + time.Second/2)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", ax.x(t), padTop+chartH-lines[n](p)/top*chartH))
		}
		s.f(`<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`, strings.Join(pts, " "), colours[n])
		s.text(labelW+chartW-160+float64(k)*80, padTop+chartH+16, "legend", n)
		s.f(`<rect x="%.1f" y="%.1f" width="10" height="3" fill="%s"/>`, labelW+chartW-172+float64(k)*80, padTop+chartH+11, colours[n])
	}
	s.f(`</svg>`)
	return s.html()
}

type check struct {
	Name, Result string
	OK           bool
}

// checks is the verdict table: each judgement the run made and what it found.
func checks(r lab.Report) []check {
	var out []check
	failedStep := ""
	for i, s := range r.Steps {
		if s.Error != "" {
			failedStep = fmt.Sprintf("step %d (%s): %s", i+1, s.Step, s.Error)
			break
		}
	}
	if failedStep == "" {
		out = append(out, check{"plan steps", fmt.Sprintf("%d steps done", len(r.Steps)), true})
	} else {
		out = append(out, check{"plan steps", failedStep, false})
	}
	out = append(out, check{"acknowledged writes", fmt.Sprintf("%d lost of %d", len(r.LostWrites), r.AckedWrites), len(r.LostWrites) == 0})
	out = append(out, check{"linearizability", fmt.Sprintf("%s (%d register operations)", r.Linearizable, r.HistoryOps), r.Linearizable == "Ok"})
	out = append(out, check{"watch, revisions, leases", fmt.Sprintf("%d watch events; %d problems %s", r.WatchEvents, len(r.Problems), strings.Join(r.Problems, "; ")), len(r.Problems) == 0})
	hashes := map[uint32][]string{}
	for m, h := range r.Hashes {
		hashes[h.Hash] = append(hashes[h.Hash], m)
	}
	out = append(out, check{"hashkv agreement", fmt.Sprintf("%d members answered, %d distinct hashes", len(r.Hashes), len(hashes)), len(hashes) <= 1})
	stall := fmt.Sprintf("longest write stall %v", r.Availability.LongestStall.Round(time.Millisecond))
	stallOK := true
	for _, s := range r.Steps {
		if strings.Contains(s.Error, "max-stall") {
			stallOK = false
		}
	}
	if r.Thresholds.MaxStall > 0 {
		stall += fmt.Sprintf(" (bound %v per step)", time.Duration(r.Thresholds.MaxStall))
	}
	out = append(out, check{"write stalls", stall, stallOK})
	failed := fmt.Sprintf("%d of %d requests failed", r.FailedOps, r.Availability.Requests)
	failedOK := true
	if r.Thresholds.MaxFailed > 0 {
		failed += fmt.Sprintf(" (bound %d)", r.Thresholds.MaxFailed)
		failedOK = r.FailedOps <= r.Thresholds.MaxFailed
	}
	out = append(out, check{"failed requests", failed, failedOK})
	// Plans run with auth on.
	if r.Auth != "" || strings.HasPrefix(r.Failure, "auth: ") {
		res := r.Auth
		if res == "" {
			res = r.Failure
		}
		out = append(out, check{"authentication", res, r.Auth != ""})
	}
	return out
}

var funcs = template.FuncMap{
	"dur":  func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"secs": func(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) },
	"ms":   func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/1e6) },
	"when": func(t time.Time) string { return t.Format("2006-01-02 15:04:05.000 MST") },
	"base": filepath.Base,
	"inc":  func(i int) int { return i + 1 },
	"verdict": func(r lab.Report) string {
		switch {
		case r.Skipped != "":
			return "SKIP"
		case r.Passed:
			return "PASS"
		}
		return "FAIL"
	},
	"errs": func(m map[string]int) string {
		var parts []string
		for k, v := range m {
			parts = append(parts, fmt.Sprintf("%s: %d", k, v))
		}
		sort.Strings(parts)
		return strings.Join(parts, "; ")
	},
	"short": func(s string) string {
		if len(s) > 12 {
			return s[:12]
		}
		return s
	},
}

const style = `<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px} h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0} td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4} .PASS,.ok{color:#1a7f37;font-weight:600} .FAIL,.bad{color:#c62828;font-weight:600} .SKIP{color:#8a6d00;font-weight:600}
svg text{font:11px system-ui,sans-serif} svg .lane{font-weight:600} svg .bin{fill:#fff} svg .state{fill:#000;font-weight:600}
svg .ver{fill:#444;font-size:10px} svg .num{fill:#555} svg .fault{fill:#c62828;font-weight:700} svg .unit,svg .legend{fill:#555}
svg .idle{fill:#cfcfcf;opacity:0.55} svg .band{fill:#f3f3f3} svg .odd{fill:#e9e9e9} svg .failed{fill:#ffd6d6} svg .tick{stroke:#444} svg .axis{stroke:#999}
code{font-size:12px} .small{color:#666;font-size:12px}
</style>`

var runPage = template.Must(template.New("run").Funcs(funcs).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>upgradelab {{.R.Plan}}/{{.R.Members}}: {{verdict .R}}</title>` + style + `</head><body>
<h1>{{.R.Plan}}, {{.R.Members}} members{{if .R.Subjects}}, {{.R.Subjects}}{{end}}: <span class="{{verdict .R}}">{{verdict .R}}</span></h1>
{{if .R.Failure}}<p class="bad">{{.R.Failure}}</p>{{end}}
<p class="small">{{when .R.StartedAt}} to {{when .R.EndedAt}} ({{secs .R.Duration}}), {{.R.Runtime}} runtime{{if .R.Seed}}, seed {{.R.Seed}} (replay: <code>upgradelab plan --seed {{.R.Seed}}</code> with the same --from, --via, --to, --faults, --members){{end}}, lab {{.R.Revision}}</p>
<h2>Verdict</h2>
<table><tr><th>check</th><th>found</th><th></th></tr>
{{range .Checks}}<tr><td>{{.Name}}</td><td>{{.Result}}</td><td class="{{if .OK}}ok{{else}}bad{{end}}">{{if .OK}}ok{{else}}failed{{end}}</td></tr>{{end}}
</table>
<h2>Timeline</h2>
<p class="small">A lane per member: colour is the binary, grey a stopped member, hatching a frozen or partitioned one; ticks mark what the member's /version said. Bands are the plan's steps, numbered (faults in red).</p>
{{.Timeline}}
{{range .Charts}}{{.}}{{end}}
<h2>Steps</h2>
<table><tr><th>#</th><th>step</th><th>took</th><th>requests</th><th>failed</th><th>longest write stall</th><th>p50 ms</th><th>p99 ms</th><th>max ms</th><th>ok/s</th><th>detail / error</th></tr>
{{range $i, $s := .R.Steps}}<tr><td>{{inc $i}}</td><td>{{$s.Step}}</td><td>{{secs $s.Duration}}</td><td>{{$s.Availability.Requests}}</td><td>{{$s.Availability.Failed}}{{with errs $s.Availability.Errors}} <span class="small">({{.}})</span>{{end}}</td><td>{{dur $s.Availability.LongestStall}}</td><td>{{ms $s.Availability.P50}}</td><td>{{ms $s.Availability.P99}}</td><td>{{ms $s.Availability.Max}}</td><td>{{printf "%.0f" $s.Availability.Throughput}}</td><td>{{$s.Detail}}{{if $s.Error}} <span class="bad">{{$s.Error}}</span>{{end}}</td></tr>{{end}}
<tr><th></th><th>whole run</th><th>{{secs .R.Duration}}</th><th>{{.R.Availability.Requests}}</th><th>{{.R.Availability.Failed}}</th><th>{{dur .R.Availability.LongestStall}}</th><th>{{ms .R.Availability.P50}}</th><th>{{ms .R.Availability.P99}}</th><th>{{ms .R.Availability.Max}}</th><th>{{printf "%.0f" .R.Availability.Throughput}}</th><th>{{errs .R.Errors}}</th></tr>
</table>
<h2>Binaries</h2>
<table><tr><th>subject</th><th>version</th><th>path</th><th>sha256</th></tr>
{{range $k, $b := .R.Binaries}}<tr><td>{{$k}}</td><td>{{$b.Version}}</td><td><code>{{$b.Path}}</code></td><td><code>{{short $b.SHA256}}</code></td></tr>{{end}}
</table>
<h2>Files</h2>
<p><a href="report.json">report.json</a>{{if .R.Trace}} · <a href="trace.json">trace.json</a> (OTLP JSON, {{.R.TraceSpans}} spans{{if .R.TraceDropped}}, {{.R.TraceDropped}} dropped{{end}}; import into Jaeger or Grafana Tempo){{end}}{{range .Logs}} · <a href="{{.}}">{{.}}</a>{{end}}</p>
</body></html>
`))

// HTML renders one run's page; it links to the files beside it in the run's folder.
func HTML(r lab.Report) ([]byte, error) {
	ax := axis{from: r.StartedAt, to: r.EndedAt}
	charts := []template.HTML{
		chart(r, ax, "throughput", "ok/s", map[string]func(workload.Point) float64{
			"ok":     func(p workload.Point) float64 { return float64(p.OK) },
			"writes": func(p workload.Point) float64 { return float64(p.Writes) },
		}, map[string]string{"ok": "#4e79a7", "writes": "#59a14f"}),
		chart(r, ax, "errors", "failed/s", map[string]func(workload.Point) float64{
			"failed": func(p workload.Point) float64 { return float64(p.Failed) },
		}, map[string]string{"failed": "#c62828"}),
		chart(r, ax, "latency", "ms", map[string]func(workload.Point) float64{
			"p99": func(p workload.Point) float64 { return p.P99 },
			"max": func(p workload.Point) float64 { return p.Max },
		}, map[string]string{"p99": "#f28e2b", "max": "#bab0ac"}),
	}
	var logs []string
	seen := map[string]bool{}
	for _, s := range r.Timeline.States {
		if !seen[s.Member] {
			seen[s.Member] = true
			logs = append(logs, s.Member+".log")
		}
	}
	var buf bytes.Buffer
	err := runPage.Execute(&buf, map[string]any{"R": r, "Checks": checks(r), "Timeline": timeline(r, ax), "Charts": charts, "Logs": logs})
	if err != nil {
		return nil, fmt.Errorf("render the HTML report: %w", err)
	}
	return buf.Bytes(), nil
}

var summaryPage = template.Must(template.New("summary").Funcs(funcs).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>upgradelab: {{.Passed}} of {{.Ran}} runs passed</title>` + style + `</head><body>
<h1>upgradelab: {{.Passed}} of {{.Ran}} runs passed{{if .Skipped}}, {{.Skipped}} skipped{{end}}</h1>
<table><tr><th>plan</th><th>members</th>{{range .Sets}}<th>{{if .}}{{.}}{{else}}result{{end}}</th>{{end}}</tr>
{{range .Rows}}<tr><td>{{.Plan}}{{if .Seed}} <span class="small">seed {{.Seed}}</span>{{end}}</td><td>{{.Members}}</td>
{{range .Cells}}<td>{{if .}}<span class="{{verdict .}}">{{verdict .}}</span>{{if .Skipped}} <span class="small">{{.Skipped}}</span>{{else}}{{if .Dir}} <a href="{{.Dir}}/report.html">report</a>{{end}}<br><span class="small">stall {{dur .Availability.LongestStall}}, {{.FailedOps}} failed, p99 {{ms .Availability.P99}} ms, {{secs .Duration}}</span>{{if .Failure}}<br><span class="small bad">{{.Failure}}</span>{{end}}{{end}}{{else}}—{{end}}</td>{{end}}</tr>{{end}}
</table>
{{range $set, $bins := .Binaries}}<h2>Binaries{{if $set}} of {{$set}}{{end}}</h2>
<table><tr><th>subject</th><th>version</th><th>path</th><th>sha256</th></tr>
{{range $k, $b := $bins}}<tr><td>{{$k}}</td><td>{{$b.Version}}</td><td><code>{{$b.Path}}</code></td><td><code>{{short $b.SHA256}}</code></td></tr>{{end}}
</table>{{end}}
</body></html>
`))

type summaryRow struct {
	Plan    string
	Members int
	Seed    uint64
	Cells   []*lab.Report
}

// Summary renders the matrix page: a row per plan, size and seed, a column per subject set,
// each cell linking to its run's page (run folders relative to the page's directory dir).
func Summary(reports []lab.Report, dir string) ([]byte, error) {
	var sets []string
	setIndex := map[string]int{}
	bins := map[string]map[string]any{}
	for _, r := range reports {
		if _, ok := setIndex[r.Subjects]; !ok {
			setIndex[r.Subjects] = len(sets)
			sets = append(sets, r.Subjects)
		}
		for k, b := range r.Binaries {
			if bins[r.Subjects] == nil {
				bins[r.Subjects] = map[string]any{}
			}
			bins[r.Subjects][k] = b
		}
	}
	var rows []*summaryRow
	rowIndex := map[string]*summaryRow{}
	passed, ran, skipped := 0, 0, 0
	for i := range reports {
		r := reports[i]
		switch {
		case r.Skipped != "":
			skipped++
		case r.Passed:
			passed++
			ran++
		default:
			ran++
		}
		if r.Dir != "" {
			if rel, err := filepath.Rel(dir, r.Dir); err == nil {
				r.Dir = filepath.ToSlash(rel)
			}
		}
		key := fmt.Sprintf("%s/%d/%d", r.Plan, r.Members, r.Seed)
		row, ok := rowIndex[key]
		if !ok {
			row = &summaryRow{Plan: r.Plan, Members: r.Members, Seed: r.Seed, Cells: make([]*lab.Report, len(sets))}
			rowIndex[key] = row
			rows = append(rows, row)
		}
		row.Cells[setIndex[r.Subjects]] = &r
	}
	var buf bytes.Buffer
	err := summaryPage.Execute(&buf, map[string]any{"Sets": sets, "Rows": rows, "Passed": passed, "Ran": ran, "Skipped": skipped, "Binaries": bins})
	if err != nil {
		return nil, fmt.Errorf("render the summary page: %w", err)
	}
	return buf.Bytes(), nil
}
