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
	old := Version
	defer func() { Version = old }()
	Version = "3.6.0"
	if StorageVersion.On(Level{}) || StorageVersion.On(V3_5) || !StorageVersion.On(V3_6) {
		t.Fatal("storage version must be on only at cluster version 3.6")
	}
	Version = "3.5.0"
	if StorageVersion.Built() || StorageVersion.On(V3_6) {
		t.Fatal("a 3.5 binary must not have 3.6 features, whatever the cluster says")
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
	}
	for _, c := range cases {
		err := CheckRun(c.bin, c.cluster, c.dg)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckRun(%v, %v, %+v) = %v; want %q", c.bin, c.cluster, c.dg, err, c.want)
		}
	}
}

func TestCheckPeer(t *testing.T) {
	if err := CheckPeer(V3_6, Level{}, DowngradeInfo{}, "3.5.0"); err != nil {
		t.Fatal(err)
	}
	if err := CheckPeer(V3_6, Level{}, DowngradeInfo{}, "3.4.0"); err == nil {
		t.Fatal("a 3.4 peer was accepted by a 3.6 member")
	}
	if err := CheckPeer(V3_6, V3_6, DowngradeInfo{}, "3.5.0"); err == nil || !strings.Contains(err.Error(), "3.5.0") {
		t.Fatalf("an older peer in a 3.6 cluster: %v", err)
	}
	if err := CheckPeer(V3_6, V3_6, DowngradeInfo{TargetVersion: "3.5.0", Enabled: true}, "3.5.0"); err != nil {
		t.Fatalf("a 3.5 peer during a downgrade to 3.5: %v", err)
	}
	if err := CheckPeer(V3_6, V3_6, DowngradeInfo{}, "garbage"); err == nil {
		t.Fatal("an unreadable peer version was accepted")
	}
}

func TestCheckBuild(t *testing.T) {
	old := Version
	defer func() { Version = old }()
	for v, ok := range map[string]bool{"3.5.0": true, "3.6.2": true, "3.7.0": true, "3.4.0": false, "3.8.0": false, "x": false} {
		Version = v
		if err := CheckBuild(); (err == nil) != ok {
			t.Errorf("CheckBuild with %s: %v", v, err)
		}
	}
}
