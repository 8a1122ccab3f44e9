package workload

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func ms(n int) int64 { return int64(time.Duration(n) * time.Millisecond) }

func TestWindow(t *testing.T) {
	samples := []Sample{
		{Start: ms(0), End: ms(10), Write: true},
		{Start: ms(5), End: ms(20)},                                    // a read: no stall ends here
		{Start: ms(20), End: ms(600), Write: true, Err: "timeout"},     // a failed write ends no stall either
		{Start: ms(590), End: ms(610), Write: true},                    // first write after 600 ms
		{Start: ms(900), End: ms(1000), Write: true},                   // window end is 1000: outside
		{Start: ms(-50), End: ms(-1), Write: true, Err: "Unavailable"}, // before the window
	}
	a := Window(samples, 0, ms(1000))
	if a.Requests != 4 || a.Failed != 1 || a.Errors["timeout"] != 1 || len(a.Errors) != 1 {
		t.Errorf("counts: %+v", a)
	}
	if a.LongestStall != 600*time.Millisecond || a.StallFrom != 10*time.Millisecond {
		t.Errorf("stall %v from %v, want 600ms from 10ms", a.LongestStall, a.StallFrom)
	}
	if a.Max != 580*time.Millisecond || a.P50 != 20*time.Millisecond {
		t.Errorf("latency p50 %v max %v", a.P50, a.Max)
	}
	if a.Throughput != 3 {
		t.Errorf("throughput %v, want 3 ok requests in 1 s", a.Throughput)
	}
	// A window without writes stalls for all of it.
	if a := Window(nil, ms(100), ms(300)); a.LongestStall != 200*time.Millisecond || a.Requests != 0 {
		t.Errorf("empty window: %+v", a)
	}
	if a := Window(samples, ms(5), ms(5)); a.Requests != 0 {
		t.Errorf("empty range: %+v", a)
	}
}

func TestErrorClass(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{context.DeadlineExceeded, "timeout"},
		{fmt.Errorf("put: %w", context.DeadlineExceeded), "timeout"},
		{status.Error(codes.DeadlineExceeded, "context deadline exceeded"), "timeout"},
		{status.Error(codes.Unavailable, "etcdserver: leader changed"), "Unavailable: etcdserver: leader changed"},
		{errors.New("plain"), "plain"},
	}
	for _, c := range cases {
		if got := ErrorClass(c.err); got != c.want {
			t.Errorf("ErrorClass(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

func TestSeriesBucketsWholeSecondsOnly(t *testing.T) {
	s := time.Second.Nanoseconds()
	samples := []Sample{
		{Start: 0, End: s / 2, Write: true},
		{Start: s / 2, End: s/2 + 3e6},
		{Start: s, End: s + s/10, Err: "timeout"},
		{Start: 2 * s, End: 2*s + s/2, Write: true}, // in the last, partial bucket: left out
	}
	pts := Series(samples, 2*s+s*6/10, time.Second)
	if len(pts) != 2 {
		t.Fatalf("%d points, want 2", len(pts))
	}
	if p := pts[0]; p.T != 0 || p.OK != 2 || p.Writes != 1 || p.Failed != 0 || p.Max != 500 {
		t.Fatalf("first second %+v", p)
	}
	if p := pts[1]; p.T != 1 || p.OK != 0 || p.Failed != 1 || p.P99 != 100 {
		t.Fatalf("second second %+v", p)
	}
	if Series(samples, 0, time.Second) != nil {
		t.Fatal("an empty run has points")
	}
}
