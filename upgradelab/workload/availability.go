package workload

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sample is one request as availability sees it: when it was sent and answered (nanoseconds
// since the workload started), whether it wrote, and its error class ("" when it succeeded).
type Sample struct {
	Start, End int64
	Write      bool
	Err        string
}

// Availability is what the workload saw in a window of time.
type Availability struct {
	Requests int            `json:"requests"`
	Failed   int            `json:"failed"`
	Errors   map[string]int `json:"errors,omitempty"`
	// LongestStall is the longest stretch of the window in which no write succeeded.
	LongestStall time.Duration `json:"longestStallNs"`
	// StallFrom is when that stretch began, relative to the workload's start.
	StallFrom time.Duration `json:"stallFromNs"`
	// Latencies of every answered request (failures included: a timeout is what a client
	// waited).
	P50 time.Duration `json:"p50Ns"`
	P99 time.Duration `json:"p99Ns"`
	Max time.Duration `json:"maxNs"`
	// Throughput is successful requests per second.
	Throughput float64 `json:"throughput"`
}

// Window computes the availability of the requests answered in [from, to).
func Window(samples []Sample, from, to int64) Availability {
	a := Availability{Errors: map[string]int{}}
	if to <= from {
		return a
	}
	var lat []int64
	var writes []int64
	ok := 0
	for _, s := range samples {
		if s.End < from || s.End >= to {
			continue
		}
		a.Requests++
		lat = append(lat, s.End-s.Start)
		if s.Err != "" {
			a.Failed++
			a.Errors[s.Err]++
			continue
		}
		ok++
		if s.Write {
			writes = append(writes, s.End)
		}
	}
	sort.Slice(writes, func(i, j int) bool { return writes[i] < writes[j] })
	prev := from
	for _, w := range append(writes, to) {
		if gap := w - prev; gap > int64(a.LongestStall) {
			a.LongestStall, a.StallFrom = time.Duration(gap), time.Duration(prev)
		}
		prev = w
	}
	if len(lat) > 0 {
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		a.P50 = time.Duration(lat[len(lat)/2])
		a.P99 = time.Duration(lat[min(len(lat)-1, len(lat)*99/100)])
		a.Max = time.Duration(lat[len(lat)-1])
	}
	a.Throughput = float64(ok) / time.Duration(to-from).Seconds()
	if len(a.Errors) == 0 {
		a.Errors = nil
	}
	return a
}

// String is the one-line summary reports print.
func (a Availability) String() string {
	s := fmt.Sprintf("%d requests, %d failed, longest write stall %v, latency p50 %v p99 %v max %v, %.0f ok/s",
		a.Requests, a.Failed, a.LongestStall.Round(time.Millisecond), a.P50.Round(time.Microsecond*100),
		a.P99.Round(time.Millisecond), a.Max.Round(time.Millisecond), a.Throughput)
	if len(a.Errors) > 0 {
		var parts []string
		for k, v := range a.Errors {
			parts = append(parts, fmt.Sprintf("%s: %d", k, v))
		}
		sort.Strings(parts)
		s += " (" + strings.Join(parts, "; ") + ")"
	}
	return s
}

// ErrorClass names the kind of a failed request for the report's error table: the gRPC code
// and the server's short message, or "timeout" when the client gave up.
func ErrorClass(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		if st.Code() == codes.DeadlineExceeded {
			return "timeout"
		}
		msg := st.Message()
		if len(msg) > 60 {
			msg = msg[:60]
		}
		return st.Code().String() + ": " + msg
	}
	s := err.Error()
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

// Point is the workload in one bucket of time: T is the bucket's start in seconds since the
// workload began; latencies are of the requests answered in it, in milliseconds.
type Point struct {
	T      float64 `json:"t"`
	OK     int     `json:"ok"`
	Failed int     `json:"failed"`
	Writes int     `json:"writes"`
	P50    float64 `json:"p50Ms"`
	P99    float64 `json:"p99Ms"`
	Max    float64 `json:"maxMs"`
}

// Series buckets the requests answered before to (nanoseconds since the workload began) by
// the time they were answered, for the report's charts.
func Series(samples []Sample, to int64, bucket time.Duration) []Point {
	if to <= 0 || bucket <= 0 {
		return nil
	}
	n := int(to / int64(bucket)) // whole buckets only: a last, partial one would read as a drop
	pts := make([]Point, n)
	lat := make([][]int64, n)
	for i := range pts {
		pts[i].T = (time.Duration(i) * bucket).Seconds()
	}
	for _, s := range samples {
		if s.End < 0 || s.End >= to {
			continue
		}
		i := int(s.End / int64(bucket))
		if i >= n {
			continue
		}
		p := &pts[i]
		if s.Err != "" {
			p.Failed++
		} else {
			p.OK++
			if s.Write {
				p.Writes++
			}
		}
		lat[i] = append(lat[i], s.End-s.Start)
	}
	for i, l := range lat {
		if len(l) == 0 {
			continue
		}
		sort.Slice(l, func(a, b int) bool { return l[a] < l[b] })
		ms := func(ns int64) float64 { return float64(ns) / 1e6 }
		pts[i].P50, pts[i].P99, pts[i].Max = ms(l[len(l)/2]), ms(l[min(len(l)-1, len(l)*99/100)]), ms(l[len(l)-1])
	}
	return pts
}
