package reqrecord

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Dist is a size distribution: median, 99th percentile and largest.
type Dist struct {
	P50 int `json:"p50"`
	P99 int `json:"p99"`
	Max int `json:"max"`
}

func distOf(xs []int) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	sort.Ints(xs)
	return Dist{P50: xs[len(xs)/2], P99: xs[(len(xs)*99)/100], Max: xs[len(xs)-1]}
}

func (d Dist) String() string {
	if d.Max == 0 {
		return "-"
	}
	return fmt.Sprintf("%d / %d / %d", d.P50, d.P99, d.Max)
}

// Row is one kind of request in a window: every call with the same method, resource, span
// and shape.
type Row struct {
	Method    string  `json:"method"`
	Resource  string  `json:"resource"`
	Span      string  `json:"span,omitempty"`
	Shape     string  `json:"shape,omitempty"`
	Calls     int     `json:"calls"`
	PerMinute float64 `json:"perMinute"`
	// RequestBytes and ValueBytes are of the requests (values written); AnswerCount and
	// AnswerBytes of the answers (kvs or events returned, their values).
	RequestBytes Dist `json:"requestBytes"`
	ValueBytes   Dist `json:"valueBytes"`
	AnswerCount  Dist `json:"answerCount"`
	AnswerBytes  Dist `json:"answerBytes"`
	// Then counts the Txns whose compares held; Errors the calls that failed.
	Then   int `json:"then,omitempty"`
	Errors int `json:"errors,omitempty"`
	Leased int `json:"leased,omitempty"` // requests writing with a lease
}

// Window is the part of a recording between two phase marks.
type Window struct {
	Phase    string
	From, To time.Duration
}

// Windows cuts a recording at its phase marks; the part before the first mark is "start".
func Windows(calls []*Call, end time.Duration) []Window {
	ws := []Window{{Phase: "start"}}
	for _, c := range calls {
		if c.Method == "phase" {
			ws[len(ws)-1].To = c.At
			ws = append(ws, Window{Phase: c.Phase, From: c.At})
		}
	}
	ws[len(ws)-1].To = end
	return ws
}

type rowKey struct{ method, resource, span, shape string }

type rowAcc struct {
	row                      Row
	req, val, count, answers []int
}

func (a *rowAcc) add(req, ans Message, err string) {
	a.row.Calls++
	a.req = append(a.req, req.Bytes)
	if req.ValueBytes > 0 {
		a.val = append(a.val, req.ValueBytes)
	}
	a.count = append(a.count, ans.Count)
	a.answers = append(a.answers, ans.ValueBytes)
	if ans.Shape == "then" {
		a.row.Then++
	}
	if req.Lease {
		a.row.Leased++
	}
	if err != "" {
		a.row.Errors++
	}
}

// Summarize groups the unary calls and the watch streams' messages that started in w by kind.
// Each watch create, cancel and progress request is a row of method "Watch"; the answers of a
// stream are rows of method "Watch answer", by the resource their stream watches and the
// answer's kind (events, progress); a LeaseKeepAlive stream's requests are one row.
func Summarize(calls []*Call, prefix string, w Window) []Row {
	accs := map[rowKey]*rowAcc{}
	add := func(k rowKey, req, ans Message, err string) {
		a, ok := accs[k]
		if !ok {
			a = &rowAcc{row: Row{Method: k.method, Resource: k.resource, Span: k.span, Shape: k.shape}}
			accs[k] = a
		}
		a.add(req, ans, err)
	}
	in := func(at time.Duration) bool { return at >= w.From && at < w.To }
	for _, c := range calls {
		switch c.Method {
		case "phase":
		case "Watch":
			// clientv3 puts many watches on one stream and creates them one at a time: the
			// n-th "created" answer is the n-th create's, and names the watch id later answers carry.
			var creates []string
			for _, r := range c.Requests {
				if strings.HasPrefix(r.Shape, "create") {
					creates = append(creates, Resource(r.Key, prefix))
				}
				if in(r.At) {
					add(rowKey{"Watch", Resource(r.Key, prefix), r.Span, r.Shape}, r, Message{}, "")
				}
			}
			watched := map[int64]string{}
			created := 0
			for _, a := range c.Answers {
				if a.Shape == "created" {
					if created < len(creates) {
						watched[a.WatchID] = creates[created]
					}
					created++
					continue
				}
				res, ok := watched[a.WatchID]
				if !ok {
					res = "(stream)" // a progress answer to the stream's progress request
				}
				if in(a.At) {
					add(rowKey{"Watch answer", res, "", a.Shape}, Message{Bytes: a.Bytes}, a, "")
				}
			}
		case "LeaseKeepAlive":
			for _, r := range c.Requests {
				if in(r.At) {
					add(rowKey{"LeaseKeepAlive", "", "", ""}, r, Message{}, "")
				}
			}
		default:
			if !in(c.At) {
				continue
			}
			var req, ans Message
			if len(c.Requests) > 0 {
				req = c.Requests[0]
			}
			for _, a := range c.Answers { // one, or a RangeStream's chunks
				ans.Bytes += a.Bytes
				ans.Count += a.Count
				ans.ValueBytes += a.ValueBytes
				if ans.Shape == "" {
					ans.Shape = a.Shape
				}
			}
			res := ""
			if req.Key != "" {
				res = Resource(req.Key, prefix)
				if req.Span == "" && isResourceKey(req.Key, prefix) {
					req.Span = ResourceKey
				}
			}
			add(rowKey{c.Method, res, req.Span, req.Shape}, req, ans, c.Err)
		}
	}
	minutes := (w.To - w.From).Minutes()
	var rows []Row
	for _, a := range accs {
		a.row.RequestBytes, a.row.ValueBytes = distOf(a.req), distOf(a.val)
		a.row.AnswerCount, a.row.AnswerBytes = distOf(a.count), distOf(a.answers)
		if minutes > 0 {
			a.row.PerMinute = float64(a.row.Calls) / minutes
		}
		rows = append(rows, a.row)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Calls != rows[j].Calls {
			return rows[i].Calls > rows[j].Calls
		}
		a, b := rows[i], rows[j]
		return a.Method+a.Resource+a.Span+a.Shape < b.Method+b.Resource+b.Span+b.Shape
	})
	return rows
}
