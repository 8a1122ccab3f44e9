package features

import (
	"strings"
	"testing"
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
