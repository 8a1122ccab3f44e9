package version

import (
	"strings"
	"testing"
)

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]Level{"3.6": V3_6, "3.6.0": V3_6, "3.5.21": V3_5, "v3.6.1-rc.0": V3_6} {
		got, err := ParseLevel(in)
		if err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "3", "three.six", "3.6.x", "-1.2"} {
		if _, err := ParseLevel(bad); err == nil {
			t.Errorf("ParseLevel(%q) accepted", bad)
		}
	}
}

func TestLevelOrder(t *testing.T) {
	if !V3_5.Less(V3_6) || V3_6.Less(V3_5) || V3_6.Less(V3_6) {
		t.Fatal("level order is wrong")
	}
	if V3_5.Next() != V3_6 || V3_6.Prev() != V3_5 || V3_6.Full() != "3.6.0" || V3_6.String() != "3.6" {
		t.Fatal("level arithmetic or formatting is wrong")
	}
}

func TestFeaturesFollowTheClusterVersion(t *testing.T) {
	if StorageVersion.On(V3_6, Level{}) || StorageVersion.On(V3_6, V3_5) || !StorageVersion.On(V3_6, V3_6) {
		t.Fatal("storage version must be on only at cluster version 3.6")
	}
	if StorageVersion.Built(V3_5) || StorageVersion.On(V3_5, V3_6) {
		t.Fatal("a 3.5 binary must not have 3.6 features, whatever the cluster says")
	}
	for _, f := range []Feature{StorageVersion, Downgrade, LeaseCheckpointPersist} {
		if f.Level() != V3_6 || f.String() == "" || !f.Built(V3_7) {
			t.Errorf("feature %v: level %v", f, f.Level())
		}
	}
	// RangeStream comes with 3.7 binaries: none below, every one from 3.7 on.
	if RangeStream.Level() != V3_7 || RangeStream.Built(V3_6) || !RangeStream.Built(V3_7) || RangeStream.String() != "range-stream" {
		t.Errorf("RangeStream: level %v, built at 3.6 %v", RangeStream.Level(), RangeStream.Built(V3_6))
	}
}

func TestCheckRun(t *testing.T) {
	dg35 := DowngradeInfo{TargetVersion: "3.5.0", Enabled: true}
	cases := []struct {
		bin, cluster Level
		dg           DowngradeInfo
		want         string // "" = allowed
	}{
		{V3_6, Level{}, DowngradeInfo{}, ""},
		{V3_6, V3_5, DowngradeInfo{}, ""},
		{V3_6, V3_6, DowngradeInfo{}, ""},
		{V3_5, V3_6, DowngradeInfo{}, "etcd 3.5 is older than the cluster version 3.6"},
		{V3_5, V3_6, dg35, ""},
		{Level{3, 4}, V3_6, dg35, "older than the cluster version 3.6"},
		{Level{3, 7}, V3_5, DowngradeInfo{}, "more than one minor version newer than the cluster version 3.5"},
		{Level{4, 0}, V3_6, DowngradeInfo{}, "more than one minor version newer"},
		// 3.0 is upstream's record before the first decision, not a level: left to the peers.
		{V3_6, Level{3, 0}, DowngradeInfo{}, ""},
		{Level{3, 7}, Level{3, 0}, DowngradeInfo{}, ""},
	}
	for _, c := range cases {
		err := CheckRun(c.bin, c.cluster, c.dg)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckRun(%v, %v, %+v) = %v; want %q", c.bin, c.cluster, c.dg, err, c.want)
		}
	}
}

// TooOld is what stops a running member when the cluster version passes its binary (the
// version loop, and the apply of a cluster version at the log's tip).
func TestTooOld(t *testing.T) {
	dg36 := DowngradeInfo{TargetVersion: "3.6.0", Enabled: true}
	v37 := Level{3, 7}
	cases := []struct {
		name         string
		bin, cluster Level
		dg           DowngradeInfo
		want         bool
	}{
		{"same level", V3_6, V3_6, DowngradeInfo{}, false},
		{"newer binary (an upgrade under way)", v37, V3_6, DowngradeInfo{}, false},
		{"older binary, no downgrade", V3_6, v37, DowngradeInfo{}, true},
		{"joined during a downgrade to it, before the leader lowered the version", V3_6, v37, dg36, false},
		{"a downgrade to another level", V3_5, v37, dg36, true},
		{"a downgrade recorded but cancelled", V3_6, v37, DowngradeInfo{TargetVersion: "3.6.0"}, true},
	}
	for _, c := range cases {
		if got := TooOld(c.bin, c.cluster, c.dg); got != c.want {
			t.Errorf("%s: TooOld(%v, %v, %+v) = %v, want %v", c.name, c.bin, c.cluster, c.dg, got, c.want)
		}
	}
}

func TestCheckPeer(t *testing.T) {
	dg35 := DowngradeInfo{TargetVersion: "3.5.0", Enabled: true}
	cases := []struct {
		cluster   Level
		dg        DowngradeInfo
		peer, min string
		want      string // "" = accepted
	}{
		{Level{}, DowngradeInfo{}, "3.5.0", "", ""},
		{Level{}, DowngradeInfo{}, "3.7.0", "3.6.0", ""},
		{Level{}, DowngradeInfo{}, "3.4.0", "", "peer version 3.4.0 is more than one minor version away from the local version 3.6.0"},
		{V3_6, DowngradeInfo{}, "3.5.0", "", "peer version 3.5.0 is incompatible with cluster version 3.6 (local version 3.6.0): etcd 3.5 is older than the cluster version 3.6: run an etcd 3.6 binary, or enable a downgrade to 3.5 first (etcdctl downgrade enable 3.5)"},
		{V3_6, dg35, "3.5.0", "", ""},
		{V3_6, DowngradeInfo{}, "garbage", "", `peer announced an unreadable server version "garbage"`},
		{V3_6, DowngradeInfo{}, "3.6.1", "x", `peer announced an unreadable minimum cluster version "x"`},
		{V3_6, DowngradeInfo{}, "3.7.0", "3.7.0", "peer version 3.7.0 needs a cluster version of at least 3.7, but this member runs 3.6.0"},
		// Upstream's 3.0 before the first decision: the binaries must be within one minor.
		{Level{3, 0}, DowngradeInfo{}, "3.5.35", "3.0.0", ""},
		{Level{3, 0}, DowngradeInfo{}, "3.4.0", "", "peer version 3.4.0 is more than one minor version away from the local version 3.6.0"},
	}
	for _, c := range cases {
		err := CheckPeer("3.6.0", c.cluster, c.dg, c.peer, c.min)
		if c.want == "" && err != nil || c.want != "" && (err == nil || err.Error() != c.want) {
			t.Errorf("CheckPeer(3.6.0, %v, %+v, %s, %q) = %v; want %q", c.cluster, c.dg, c.peer, c.min, err, c.want)
		}
	}
}

func TestCheckStartAndJoin(t *testing.T) {
	if err := CheckStart("3.5.0", V3_6, V3_5, DowngradeInfo{}, "/d"); err == nil || err.Error() != "the data in /d has storage version 3.6, newer than this etcd 3.5.0: start it with an etcd 3.6 binary, or first run 'etcdutl migrate --data-dir /d --target-version 3.5' (etcdutl 3.6)" {
		t.Errorf("newer storage: %v", err)
	}
	if err := CheckStart("3.5.0", V3_5, V3_6, DowngradeInfo{}, "/d"); err == nil || !strings.HasPrefix(err.Error(), "cannot start on the data in /d: etcd 3.5 is older than the cluster version 3.6: run an etcd 3.6 binary, or enable a downgrade to 3.5 first (etcdctl downgrade enable 3.5)") {
		t.Errorf("older binary: %v", err)
	}
	if err := CheckStart("3.6.0", V3_6, V3_6, DowngradeInfo{}, "/d"); err != nil {
		t.Errorf("same level: %v", err)
	}
	if err := CheckStart("3.5.0", V3_5, V3_5, DowngradeInfo{}, "/d"); err != nil {
		t.Errorf("a downgraded member on migrated data: %v", err)
	}
	// A 3.5 cluster stopped before its leader first decided its version records 3.0: its
	// storage version (3.5) stands for the cluster version.
	if err := CheckStart("3.6.16", V3_5, Level{3, 0}, DowngradeInfo{}, "/d"); err != nil {
		t.Errorf("3.6 on 3.5 data whose cluster version was not decided: %v", err)
	}
	if err := CheckStart("3.7.3", V3_5, Level{3, 0}, DowngradeInfo{}, "/d"); err == nil || !strings.Contains(err.Error(), "more than one minor version newer than the cluster version 3.5") {
		t.Errorf("3.7 on 3.5 data whose cluster version was not decided: %v", err)
	}
	if err := CheckJoin(V3_7, V3_5, DowngradeInfo{}); err == nil || err.Error() != "cannot join the cluster: etcd 3.7 is more than one minor version newer than the cluster version 3.5: upgrade one minor version at a time (every member to 3.6 first)" {
		t.Errorf("skip-version join: %v", err)
	}
	dg35 := DowngradeInfo{TargetVersion: "3.5.0", Enabled: true}
	if err := CheckJoin(V3_6, V3_5, dg35); err == nil || err.Error() != "cannot join the cluster: etcd 3.6 is newer than the downgrade target 3.5: a downgrade to 3.5 is in progress, so a new member must run an etcd 3.5 binary (or cancel the downgrade first: etcdctl downgrade cancel)" {
		t.Errorf("a newer member joining during a downgrade: %v", err)
	}
	if err := CheckJoin(V3_5, V3_5, dg35); err != nil {
		t.Errorf("a member at the target joining during a downgrade: %v", err)
	}
	if err := CheckJoin(V3_6, V3_6, dg35); err == nil {
		t.Error("a newer member joining before the cluster version was lowered")
	}
	if err := CheckJoin(V3_6, V3_5, DowngradeInfo{}); err != nil {
		t.Errorf("after the downgrade completed, the next level may join again: %v", err)
	}
}

func TestCheckBuild(t *testing.T) {
	for v, want := range map[string]string{"3.5": "", "3.6": "", "3.7": "",
		"3.4": "this binary was built as 3.4, but the tree implements levels 3.5 to 3.7",
		"3.8": "this binary was built as 3.8, but the tree implements levels 3.5 to 3.7",
		"x":   `this binary was built with level "x"`} {
		err := CheckBuild(v)
		if want == "" && err != nil || want != "" && (err == nil || !strings.HasPrefix(err.Error(), want)) {
			t.Errorf("CheckBuild(%s) = %v; want %q", v, err, want)
		}
	}
}
