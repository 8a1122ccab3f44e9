package auth

import (
	"testing"

	"go.etcd.io/etcd/api/v3/authpb"
)

func TestPermissionCoverage(t *testing.T) {
	perm := func(typ authpb.Permission_Type, key, end string) *authpb.Permission {
		return &authpb.Permission{PermType: typ, Key: []byte(key), RangeEnd: []byte(end)}
	}
	roles := map[string]*authpb.Role{
		"prefix": {Name: []byte("prefix"), KeyPermission: []*authpb.Permission{perm(authpb.READWRITE, "/a/", "/a0")}},
		"point":  {Name: []byte("point"), KeyPermission: []*authpb.Permission{perm(authpb.READ, "/b", "")}},
		"range":  {Name: []byte("range"), KeyPermission: []*authpb.Permission{perm(authpb.WRITE, "/c", "/d")}},
		"from":   {Name: []byte("from"), KeyPermission: []*authpb.Permission{perm(authpb.READ, "/x", "\x00")}},
		// Two touching ranges cover the range across them.
		"split": {Name: []byte("split"), KeyPermission: []*authpb.Permission{perm(authpb.READ, "/m", "/n"), perm(authpb.READ, "/n", "/p")}},
	}
	u := &authpb.User{Name: []byte("u"), Roles: []string{"from", "point", "prefix", "range", "split", "missing"}}
	p := mergePerms(u, roles)
	cases := []struct {
		write    bool
		key, end string
		want     bool
	}{
		{false, "/a/1", "", true},
		{true, "/a/1", "", true},
		{false, "/a/", "/a0", true},
		{false, "/a/", "/a1", false},
		{false, "/a", "", false},
		{false, "/b", "", true},
		{true, "/b", "", false},
		{false, "/b", "/b\x00", true},
		{false, "/b", "/c", false},
		{true, "/c", "/d", true},
		{true, "/c/zzz", "", true},
		{true, "/d", "", false},
		{false, "/c", "", false},
		{false, "/x", "\x00", true},
		{false, "/y", "\x00", true},
		{false, "/w", "\x00", false},
		{false, "zzzz", "", true}, // past /x, which is read from onwards
		{false, "/m", "/p", true},
		{false, "/m", "/p\x00", false},
		{false, "/l", "/n", false},
		{false, "\x00", "\x00", false},
		// An empty range asks for its first key.
		{false, "/b", "/a", true},
		{false, "/q", "/a", false},
	}
	for _, c := range cases {
		if got := p.allows(c.write, []byte(c.key), []byte(c.end)); got != c.want {
			t.Errorf("write=%v [%q, %q): got %v, want %v", c.write, c.key, c.end, got, c.want)
		}
	}
}

func TestValidPermRange(t *testing.T) {
	cases := []struct {
		key, end string
		want     bool
	}{
		{"a", "", true}, {"a", "b", true}, {"a", "\x00", true}, {"b", "a", false}, {"a", "a", false}, {"", "", false}, {"", "\x00", false},
	}
	for _, c := range cases {
		if got := validPermRange([]byte(c.key), []byte(c.end)); got != c.want {
			t.Errorf("[%q, %q): got %v, want %v", c.key, c.end, got, c.want)
		}
	}
}
