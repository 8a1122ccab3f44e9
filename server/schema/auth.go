package schema

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/authpb"
)

// Keys of the auth bucket, as upstream names them.
var (
	AuthEnabledKey  = []byte("authEnabled")  // one byte: 1 on, 0 off; absent means off
	AuthRevisionKey = []byte("authRevision") // uint64: bumped by every change to users or roles
)

// AuthState is everything the auth buckets hold. Users are stored under their name as
// authpb.User (bcrypt hash in Password, roles sorted), roles under their name as authpb.Role.
type AuthState struct {
	Enabled  bool
	Revision uint64
	Users    map[string]*authpb.User
	Roles    map[string]*authpb.Role
}

// ReadAuth reads the auth buckets; a file without them (or with them empty) has auth off at
// revision 0.
func ReadAuth(tx *bolt.Tx) (AuthState, error) {
	st := AuthState{Users: map[string]*authpb.User{}, Roles: map[string]*authpb.Role{}}
	if b := tx.Bucket(Auth); b != nil {
		if v := b.Get(AuthEnabledKey); len(v) == 1 && v[0] == 1 {
			st.Enabled = true
		}
		if v := b.Get(AuthRevisionKey); v != nil {
			if len(v) != 8 {
				return st, fmt.Errorf("auth bucket: %s is %d bytes, want 8", AuthRevisionKey, len(v))
			}
			st.Revision = GetUint64(v)
		}
	}
	if b := tx.Bucket(AuthUsers); b != nil {
		err := b.ForEach(func(k, v []byte) error {
			var u authpb.User
			if err := u.Unmarshal(v); err != nil {
				return fmt.Errorf("user %q: %w", k, err)
			}
			st.Users[string(k)] = &u
			return nil
		})
		if err != nil {
			return st, fmt.Errorf("%s bucket: %w", AuthUsers, err)
		}
	}
	if b := tx.Bucket(AuthRoles); b != nil {
		err := b.ForEach(func(k, v []byte) error {
			var r authpb.Role
			if err := r.Unmarshal(v); err != nil {
				return fmt.Errorf("role %q: %w", k, err)
			}
			st.Roles[string(k)] = &r
			return nil
		})
		if err != nil {
			return st, fmt.Errorf("%s bucket: %w", AuthRoles, err)
		}
	}
	return st, nil
}

// PutAuthEnabled records whether auth is on.
func PutAuthEnabled(w Writer, on bool) error {
	v := []byte{0}
	if on {
		v[0] = 1
	}
	return w.Put(Auth, AuthEnabledKey, v)
}

// PutAuthRevision records the auth revision.
func PutAuthRevision(w Writer, rev uint64) error {
	return w.Put(Auth, AuthRevisionKey, PutUint64(rev))
}

// PutUser stores a user under its name.
func PutUser(w Writer, u *authpb.User) error {
	v, err := u.Marshal()
	if err != nil {
		return fmt.Errorf("encode user %q: %w", u.Name, err)
	}
	return w.Put(AuthUsers, u.Name, v)
}

// DeleteUser removes a user.
func DeleteUser(w Writer, name string) error { return w.Delete(AuthUsers, []byte(name)) }

// PutRole stores a role under its name.
func PutRole(w Writer, r *authpb.Role) error {
	v, err := r.Marshal()
	if err != nil {
		return fmt.Errorf("encode role %q: %w", r.Name, err)
	}
	return w.Put(AuthRoles, r.Name, v)
}

// DeleteRole removes a role.
func DeleteRole(w Writer, name string) error { return w.Delete(AuthRoles, []byte(name)) }
