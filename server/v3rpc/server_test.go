package v3rpc

import "testing"

func TestStreamWindowHoldsTheLargestRequest(t *testing.T) {
	for _, c := range []struct {
		maxRequest int
		want       int32
	}{
		{1024, 64 << 10},                    // gRPC ignores windows under 64 KiB
		{1.5*1024*1024 + 512*1024, 2 << 20}, // the default --max-request-bytes and gRPC's overhead
		{10 << 20, 10 << 20},                // a larger limit
		{64 << 20, connWindow},              // never above the connection's
		{-1, 64 << 10},                      // a limit past int's range (a uint flag)
	} {
		if got := streamWindow(c.maxRequest); got != c.want {
			t.Errorf("streamWindow(%d) = %d, want %d", c.maxRequest, got, c.want)
		}
	}
}
