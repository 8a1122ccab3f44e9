package v2auth

import (
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"testing"
)

// Key permissions as upstream 3.5 matches them: "/foo/*" by prefix, "/foo" the key alone; a
// recursive request needs a prefix pattern; root may do anything.
func TestKeyAccess(t *testing.T) {
	r := Role{Role: "r", Permissions: Permissions{KV: RWPermission{Read: []string{"/foo/*", "/bar"}, Write: []string{"/w/*"}}}}
	for _, c := range []struct {
		key              string
		write, recursive bool
		want             bool
	}{
		{"/foo/a", false, false, true},
		{"/foo/", false, false, true},
		{"/foo", false, false, false},
		{"/foobar", false, false, false},
		{"/bar", false, false, true},
		{"/bar/x", false, false, false},
		{"/bar", false, true, false},
		{"/foo/a", false, true, true},
		{"/foo/a", true, false, false},
		{"/w/x", true, false, true},
		{"/w/x", false, false, false},
	} {
		got := r.HasKeyAccess(c.key, c.write)
		if c.recursive {
			got = r.HasRecursiveAccess(c.key, c.write)
		}
		if got != c.want {
			t.Errorf("%s write=%v recursive=%v: %v, want %v", c.key, c.write, c.recursive, got, c.want)
		}
	}
	if !rootRole.HasKeyAccess("/anything", true) || !rootRole.HasRecursiveAccess("/", true) {
		t.Error("root may not do everything")
	}
}

// Granting and revoking roles of a user: a duplicate grant and the revocation of a role not held
// are refused with upstream's words and status; the roles come out sorted.
func TestUserMerge(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	old := User{User: "u", Password: "hash", Roles: []string{"b"}}
	got, err := old.merge(log, User{User: "u", Grant: []string{"c", "a"}})
	if err != nil || !reflect.DeepEqual(got, User{User: "u", Password: "hash", Roles: []string{"a", "b", "c"}}) {
		t.Errorf("grant: %+v, %v", got, err)
	}
	got, err = old.merge(log, User{User: "u", Revoke: []string{"b"}})
	if err != nil || !reflect.DeepEqual(got, User{User: "u", Password: "hash", Roles: []string{}}) {
		t.Errorf("revoke: %+v, %v", got, err)
	}
	for _, c := range []struct {
		in   User
		want Error
	}{
		{User{User: "u", Grant: []string{"b"}}, Error{http.StatusConflict, "auth: Granting duplicate role b for user u"}},
		{User{User: "u", Revoke: []string{"x"}}, Error{http.StatusConflict, "auth: Revoking ungranted role x for user u"}},
		{User{User: "v"}, Error{http.StatusConflict, "auth: Merging user data with conflicting usernames: u v"}},
	} {
		if _, err := old.merge(log, c.in); err != c.want {
			t.Errorf("%+v: %v, want %v", c.in, err, c.want)
		}
	}
	got, err = old.merge(log, User{User: "u", Password: "new"})
	if err != nil || !CheckPassword(got, "new") || CheckPassword(got, "hash") {
		t.Errorf("a new password: %+v, %v", got, err)
	}
}

// Granting and revoking key permissions of a role.
func TestPermissionChanges(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rw := RWPermission{Read: []string{"/a"}}
	got, err := rw.grant(&Permissions{KV: RWPermission{Read: []string{"/c", "/b"}, Write: []string{"/a"}}})
	if err != nil || !reflect.DeepEqual(got, RWPermission{Read: []string{"/a", "/b", "/c"}, Write: []string{"/a"}}) {
		t.Errorf("grant: %+v, %v", got, err)
	}
	if _, err := rw.grant(&Permissions{KV: RWPermission{Read: []string{"/a"}}}); err != (Error{http.StatusConflict, "auth: Granting duplicate read permission /a"}) {
		t.Errorf("a duplicate grant: %v", err)
	}
	// Revoking what is not granted is logged and skipped, as upstream.
	if got := rw.revoke(log, &Permissions{KV: RWPermission{Read: []string{"/a", "/zz"}, Write: []string{"/q"}}}); !reflect.DeepEqual(got, RWPermission{Read: []string{}, Write: []string{}}) {
		t.Errorf("revoke: %+v", got)
	}
	if got, _ := rw.grant(nil); !reflect.DeepEqual(got, rw) {
		t.Errorf("no grant changed %+v", got)
	}
}
