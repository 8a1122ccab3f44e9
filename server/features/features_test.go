package features

import (
	"strings"
	"testing"

	"etcdx/server/version"
)

func TestGates(t *testing.T) {
	cases := []struct {
		name    string
		gates   string
		exp     map[string]bool
		wantErr string
		on, off []Feature
	}{
		{name: "defaults", on: []Feature{TxnModeWriteWithSharedBuffer}, off: []Feature{InitialCorruptCheck, CompactHashCheck}},
		{name: "one on", gates: "InitialCorruptCheck=true", on: []Feature{InitialCorruptCheck, TxnModeWriteWithSharedBuffer}},
		{name: "spaces and empty parts", gates: " CompactHashCheck = true,,", on: []Feature{CompactHashCheck}},
		{name: "all alpha, one back off", gates: "InitialCorruptCheck=false,AllAlpha=true", on: []Feature{CompactHashCheck, StopGRPCServiceOnDefrag}, off: []Feature{InitialCorruptCheck}},
		{name: "all beta off", gates: "AllBeta=false", off: []Feature{TxnModeWriteWithSharedBuffer}},
		{name: "unknown", gates: "Foo=true", wantErr: "unrecognized feature gate: Foo"},
		{name: "no value", gates: "CompactHashCheck", wantErr: "missing bool value for CompactHashCheck"},
		{name: "bad value", gates: "CompactHashCheck=yes", wantErr: "invalid value of CompactHashCheck=yes"},
		{name: "experimental flag", exp: map[string]bool{"experimental-initial-corrupt-check": true}, on: []Feature{InitialCorruptCheck}},
		{name: "experimental flag off", exp: map[string]bool{"experimental-txn-mode-write-with-shared-buffer": false}, off: []Feature{TxnModeWriteWithSharedBuffer}},
		{name: "both spellings", gates: "InitialCorruptCheck=true", exp: map[string]bool{"experimental-initial-corrupt-check": true},
			wantErr: "cannot specify both flags: --experimental-initial-corrupt-check=true and --feature-gates=InitialCorruptCheck=true at the same time, please just use --feature-gates=InitialCorruptCheck=true"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var g Gates
			var err error
			if c.gates != "" {
				err = g.Set(c.gates)
			}
			if err == nil && c.exp != nil {
				err = g.SetFromExperimental(c.exp)
			}
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range c.on {
				if !g.Enabled(f) {
					t.Errorf("%s off, want on", f)
				}
			}
			for _, f := range c.off {
				if g.Enabled(f) {
					t.Errorf("%s on, want off", f)
				}
			}
		})
	}
}

// Each level has the gates of its upstream line: 3.7 adds FastLeaseKeepAlive (beta, on) and
// PriorityRequest (alpha, off); a 3.6 member refuses them as upstream 3.6 does, and runs as if
// they were off.
func TestGatesByLevel(t *testing.T) {
	g36, g37 := &Gates{Level: version.V3_6}, &Gates{Level: version.V3_7}
	if !g37.Enabled(FastLeaseKeepAlive) || g37.Enabled(PriorityRequest) {
		t.Errorf("3.7 defaults: FastLeaseKeepAlive %v, PriorityRequest %v", g37.Enabled(FastLeaseKeepAlive), g37.Enabled(PriorityRequest))
	}
	if g36.Enabled(FastLeaseKeepAlive) || g36.Enabled(PriorityRequest) {
		t.Error("a 3.6 member has no 3.7 gates, so they are off")
	}
	if err := g36.Set("PriorityRequest=true"); err == nil || err.Error() != "unrecognized feature gate: PriorityRequest" {
		t.Errorf("3.6 given a 3.7 gate: %v", err)
	}
	if err := g37.Set("PriorityRequest=true,FastLeaseKeepAlive=false"); err != nil || !g37.Enabled(PriorityRequest) || g37.Enabled(FastLeaseKeepAlive) {
		t.Errorf("3.7 given its gates: %v", err)
	}
	// AllAlpha at 3.6 sets only 3.6's alpha gates.
	if err := g36.Set("AllAlpha=true"); err != nil || g36.Enabled(PriorityRequest) || !g36.Enabled(CompactHashCheck) {
		t.Errorf("AllAlpha at 3.6: %v", err)
	}
	names36, names37 := strings.Join(Names(version.V3_6), " "), strings.Join(Names(version.V3_7), " ")
	if strings.Contains(names36, "FastLeaseKeepAlive") || !strings.Contains(names37, "FastLeaseKeepAlive=true|false (BETA - default=true)") ||
		!strings.Contains(names37, "PriorityRequest=true|false (ALPHA - default=false)") {
		t.Errorf("help names:\n3.6 %s\n3.7 %s", names36, names37)
	}
	if n36, n37 := len(g36.All()), len(g37.All()); n37 != n36+2 {
		t.Errorf("the gates metric lists %d gates at 3.6 and %d at 3.7", n36, n37)
	}
}
