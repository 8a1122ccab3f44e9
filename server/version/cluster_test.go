package version

import (
	"errors"
	"reflect"
	"testing"
)

func members(versions ...string) []Member {
	ms := make([]Member, len(versions))
	for i, v := range versions {
		ms[i] = Member{ID: uint64(i + 1), Version: v}
	}
	return ms
}

func TestDecide(t *testing.T) {
	dg35 := DowngradeInfo{TargetVersion: "3.5.0", Enabled: true}
	cases := []struct {
		name string
		c    Cluster
		want Decision
	}{
		{"first decision", Cluster{Members: members("3.6.0", "3.6.1", "3.6.0")}, Decision{SetVersion: V3_6}},
		{"mixed: the lowest", Cluster{Members: members("3.6.0", "3.5.2", "3.6.0")}, Decision{SetVersion: V3_5}},
		{"rise when the last member upgrades", Cluster{Version: V3_5, Members: members("3.6.0", "3.6.0", "3.6.0")}, Decision{SetVersion: V3_6}},
		{"nothing to do", Cluster{Version: V3_6, Members: members("3.6.0", "3.6.0")}, Decision{}},
		// A member that is down keeps the version it last published: the cluster stays at it.
		{"member down keeps its version", Cluster{Version: V3_5, Members: members("3.6.0", "3.6.0", "3.5.0")}, Decision{HeldBy: []uint64{3}}},
		{"upgrade under way: held by the members not yet upgraded", Cluster{Version: V3_6, Members: members("3.7.3", "3.6.16", "3.6.16")}, Decision{HeldBy: []uint64{2, 3}}},
		{"never lowered without a downgrade", Cluster{Version: V3_6, Members: members("3.6.0", "3.5.0")}, Decision{}},
		{"unstarted member: undecided", Cluster{Members: members("3.6.0", "", "3.6.0")}, Decision{}},
		{"unstarted member holds the version", Cluster{Version: V3_5, Members: members("3.6.0", "")}, Decision{}},
		{"unreadable version: undecided", Cluster{Members: members("3.6.0", "bogus")}, Decision{}},
		{"no members", Cluster{}, Decision{}},
		{"downgrade lowers the version", Cluster{Version: V3_6, Downgrade: dg35, Members: members("3.6.0", "3.6.0")}, Decision{SetVersion: V3_5}},
		{"downgrade waits for every member", Cluster{Version: V3_5, Downgrade: dg35, Members: members("3.5.0", "3.6.0")}, Decision{WaitingFor: []uint64{2}}},
		{"a member down keeps the downgrade waiting", Cluster{Version: V3_5, Downgrade: dg35, Members: members("3.6.0", "3.5.0", "3.6.0")}, Decision{WaitingFor: []uint64{1, 3}}},
		{"downgrade completes", Cluster{Version: V3_5, Downgrade: dg35, Members: members("3.5.0", "3.5.1")}, Decision{FinishDowngrade: true}},
		// Members added during the downgrade and never started hold up neither step.
		{"unstarted member: the version is lowered", Cluster{Version: V3_6, Downgrade: dg35, Members: members("3.6.0", "", "3.6.0")}, Decision{SetVersion: V3_5}},
		{"unstarted member: the downgrade completes", Cluster{Version: V3_5, Downgrade: dg35, Members: members("3.5.0", "", "3.5.0")}, Decision{FinishDowngrade: true}},
	}
	for _, c := range cases {
		if got := c.c.Decide(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Decide() = %+v; want %+v", c.name, got, c.want)
		}
	}
}

// A whole downgrade, decided step by step as the leader would, then one cancelled after a swap.
func TestDowngradeLifecycle(t *testing.T) {
	c := Cluster{Version: V3_6, Members: members("3.6.0", "3.6.0", "3.6.0")}
	if err := c.ValidateDowngrade(V3_6, "3.5"); err != nil {
		t.Fatal(err)
	}
	c.Downgrade = DowngradeInfo{TargetVersion: "3.5.0", Enabled: true}
	step := func(want Decision) {
		t.Helper()
		d := c.Decide()
		if !reflect.DeepEqual(d, want) {
			t.Fatalf("cluster %+v: Decide() = %+v; want %+v", c, d, want)
		}
		if !d.SetVersion.IsZero() {
			c.Version = d.SetVersion
		}
		if d.FinishDowngrade {
			c.Downgrade = DowngradeInfo{}
		}
	}
	step(Decision{SetVersion: V3_5})
	if st, ok := StorageTarget(V3_6, c.Version); !ok || st != V3_5 || !ReadyToDowngrade(c.Version, st, c.Downgrade) {
		t.Fatalf("members must migrate their storage to 3.5 and be ready: %v %v", st, ok)
	}
	for i := range c.Members {
		c.Members[i].Version = "3.5.0" // the operator swaps binaries, one member at a time
		if i < len(c.Members)-1 {
			var waiting []uint64
			for _, m := range c.Members[i+1:] {
				waiting = append(waiting, m.ID)
			}
			step(Decision{WaitingFor: waiting})
		}
	}
	step(Decision{FinishDowngrade: true})
	step(Decision{})
	if c.Version != V3_5 || c.Downgrade.Enabled {
		t.Fatalf("after the downgrade: %+v", c)
	}

	// Cancelled after one member was swapped: the cluster stays at 3.5 until that member runs
	// 3.6 again, then rises.
	c = Cluster{Version: V3_6, Members: members("3.6.0", "3.6.0", "3.6.0"), Downgrade: DowngradeInfo{TargetVersion: "3.5.0", Enabled: true}}
	step(Decision{SetVersion: V3_5})
	c.Members[0].Version = "3.5.0"
	step(Decision{WaitingFor: []uint64{2, 3}})
	c.Downgrade = DowngradeInfo{} // CANCEL
	step(Decision{HeldBy: []uint64{1}})
	if sk := c.Skew(V3_6); !sk.Ahead || sk.Behind {
		t.Errorf("a 3.6 member of a 3.5 cluster after the cancel: %+v", sk)
	}
	if err := CheckRun(V3_5, c.Version, c.Downgrade); err != nil {
		t.Errorf("the swapped member must keep running after the cancel: %v", err)
	}
	c.Members[0].Version = "3.6.0"
	step(Decision{SetVersion: V3_6})
	if st, _ := StorageTarget(V3_6, c.Version); st != V3_6 {
		t.Errorf("storage goes back up with the cluster version: %v", st)
	}
}

func TestValidateDowngrade(t *testing.T) {
	ok := Cluster{Version: V3_6, Members: members("3.6.0", "3.6.0")}
	cases := []struct {
		name   string
		c      Cluster
		bin    Level
		target string
		want   string
	}{
		{"valid", ok, V3_6, "3.5", ""},
		{"valid full form", ok, V3_6, "3.5.0", ""},
		{"malformed", ok, V3_6, "three", "etcdserver: wrong downgrade target version format"},
		{"in progress", Cluster{Version: V3_5, Downgrade: DowngradeInfo{TargetVersion: "3.5.0", Enabled: true}, Members: members("3.6.0")}, V3_6, "3.5", "etcdserver: cluster has a downgrade job in progress"},
		{"undecided", Cluster{Members: members("3.6.0")}, V3_6, "3.5", "etcdserver: cluster version not found during downgrade"},
		{"two minors down", Cluster{Version: V3_7, Members: members("3.7.0")}, V3_7, "3.5", "etcdserver: invalid downgrade target version"},
		{"same level", ok, V3_6, "3.6", "etcdserver: invalid downgrade target version"},
		{"upward", ok, V3_6, "3.7", "etcdserver: invalid downgrade target version"},
		{"unknown level", Cluster{Version: V3_5, Members: members("3.5.0")}, V3_6, "3.4", "etcdserver: invalid downgrade target version"},
		{"a 3.5 binary has no downgrade", Cluster{Version: V3_6, Members: members("3.6.0")}, V3_5, "3.5", "etcdserver: invalid downgrade target version"},
		{"an unstarted member does not stand in the way", Cluster{Version: V3_6, Members: []Member{{ID: 1, Version: "3.6.0"}, {ID: 0xab, Version: ""}}}, V3_6, "3.5", ""},
	}
	for _, c := range cases {
		err := c.c.ValidateDowngrade(c.bin, c.target)
		if c.want == "" && err != nil || c.want != "" && (err == nil || err.Error() != c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
	if errors.Is(ok.ValidateDowngrade(V3_6, "3.6"), ErrInvalidDowngradeTarget) != true {
		t.Error("refusals are the exported errors, so the RPC layer maps their codes")
	}
}

func TestSkew(t *testing.T) {
	cases := []struct {
		name string
		c    Cluster
		bin  Level
		want Skew
	}{
		{"behind a newer member", Cluster{Version: V3_5, Members: members("3.5.0", "3.6.1")}, V3_5, Skew{Behind: true, NewestID: 2, NewestVersion: "3.6.1"}},
		{"ahead of the cluster", Cluster{Version: V3_5, Members: members("3.5.0", "3.6.1")}, V3_6, Skew{NewestID: 2, NewestVersion: "3.6.1", Ahead: true}},
		{"in step", Cluster{Version: V3_6, Members: members("3.6.0", "3.6.1")}, V3_6, Skew{NewestID: 1, NewestVersion: "3.6.0"}},
		{"a downgrade explains it", Cluster{Version: V3_5, Downgrade: DowngradeInfo{TargetVersion: "3.5.0", Enabled: true}, Members: members("3.5.0", "3.6.0")}, V3_6, Skew{}},
		{"undecided", Cluster{Members: members("3.6.0")}, V3_6, Skew{NewestID: 1, NewestVersion: "3.6.0"}},
	}
	for _, c := range cases {
		if got := c.c.Skew(c.bin); got != c.want {
			t.Errorf("%s: %+v; want %+v", c.name, got, c.want)
		}
	}
}

func TestStorageTarget(t *testing.T) {
	cases := []struct {
		bin, cluster, want Level
		ok                 bool
	}{
		{V3_6, V3_6, V3_6, true},
		{V3_6, V3_5, V3_5, true},
		{V3_6, V3_7, V3_6, true}, // never above the binary
		{V3_7, V3_6, V3_6, true},
		{V3_6, Level{}, Level{}, false},
		{V3_5, V3_5, Level{}, false}, // a 3.5 binary knows no storage version
		{V3_6, Level{3, 4}, V3_5, true},
	}
	for _, c := range cases {
		got, ok := StorageTarget(c.bin, c.cluster)
		if got != c.want || ok != c.ok {
			t.Errorf("StorageTarget(%v, %v) = %v, %v; want %v, %v", c.bin, c.cluster, got, ok, c.want, c.ok)
		}
	}
	dg := DowngradeInfo{TargetVersion: "3.5.0", Enabled: true}
	if !ReadyToDowngrade(V3_5, V3_5, dg) || ReadyToDowngrade(V3_6, V3_6, dg) || ReadyToDowngrade(V3_5, V3_6, dg) || ReadyToDowngrade(V3_5, V3_5, DowngradeInfo{}) {
		t.Error("ready only when cluster and storage versions reached the enabled target")
	}
}
