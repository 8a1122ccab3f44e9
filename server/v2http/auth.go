package v2http

import (
	"encoding/json"
	"net/http"
	"path"
	"strings"

	"etcdx/server/v2auth"
)

// caller is the v2 user a request speaks for once auth is on: basic-auth credentials, else (with
// --client-cert-auth) the common name of a verified client certificate. guest is true when the
// request carries neither (the guest role then decides).
func (a *api) caller(r *http.Request) (u *v2auth.User, guest bool) {
	if r.Header.Get("Authorization") == "" {
		if a.opt.ClientCertAuth {
			if u := a.certUser(r); u != nil {
				return u, false
			}
		}
		return nil, true
	}
	name, password, ok := r.BasicAuth()
	if !ok {
		a.log.Warn("malformed basic auth encoding")
		return nil, false
	}
	user, err := a.auth.User(name)
	if err != nil {
		return nil, false
	}
	if !v2auth.CheckPassword(user, password) {
		a.log.Warn("incorrect password", "user-name", name)
		return nil, false
	}
	return &user, false
}

func (a *api) certUser(r *http.Request) *v2auth.User {
	if r.TLS == nil {
		return nil
	}
	for _, chain := range r.TLS.VerifiedChains {
		for _, c := range chain {
			if u, err := a.auth.User(c.Subject.CommonName); err == nil {
				return &u
			}
		}
	}
	return nil
}

// rootAccess says whether r may do what only root may once auth is on.
func (a *api) rootAccess(r *http.Request) bool {
	if !a.auth.Enabled() {
		return true
	}
	u, _ := a.caller(r)
	if u == nil {
		return false
	}
	for _, role := range u.Roles {
		if role == v2auth.RootRole {
			return true
		}
	}
	a.log.Warn("a user does not have root role for resource", "root-user", u.User, "root-role-name", v2auth.RootRole, "resource-path", r.URL.Path)
	return false
}

// keyAccess says whether r may read (GET, HEAD) or write key, and everything below it when
// recursive.
func (a *api) keyAccess(r *http.Request, key string, recursive bool) bool {
	if !a.auth.Enabled() {
		return true
	}
	write := r.Method != http.MethodGet && r.Method != http.MethodHead
	u, guest := a.caller(r)
	if guest {
		role, err := a.auth.Role(v2auth.GuestRole)
		if err == nil && role.HasKeyAccess(key, write) {
			return true
		}
		a.log.Warn("invalid access for a guest role on key", "role-name", v2auth.GuestRole, "key", key)
		return false
	}
	if u == nil {
		return false
	}
	for _, name := range u.Roles {
		role, err := a.auth.Role(name)
		if err != nil {
			continue
		}
		if recursive && role.HasRecursiveAccess(key, write) || !recursive && role.HasKeyAccess(key, write) {
			return true
		}
	}
	a.log.Warn("invalid access for user on key", "user-name", u.User, "key", key)
	return false
}

// authPath splits /v2/auth/<kind>[/<name>]: ok is false for a deeper path.
func authPath(p string) (name string, ok bool) {
	pieces := strings.Split(path.Clean(p[len(authPrefix):]), "/")
	switch len(pieces) {
	case 2:
		return "", true
	case 3:
		return pieces[2], true
	}
	return "", false
}

// rootOnly answers 401 unless r may act as root, and sets the headers every auth answer has.
func (a *api) rootOnly(w http.ResponseWriter, r *http.Request) bool {
	if !a.rootAccess(r) {
		writeNoAuth(w)
		return false
	}
	a.clusterHeader(w)
	w.Header().Set("Content-Type", "application/json")
	return true
}

// roles serves /v2/auth/roles and /v2/auth/roles/<name>.
func (a *api) roles(w http.ResponseWriter, r *http.Request) {
	name, ok := authPath(r.URL.Path)
	switch {
	case !ok:
		a.writeError(w, r, httpError{Message: "Invalid path", status: http.StatusBadRequest})
	case name == "":
		if !allow(w, r, http.MethodGet) || !a.rootOnly(w, r) {
			return
		}
		names, err := a.auth.Roles()
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		var out struct {
			Roles []v2auth.Role `json:"roles"`
		}
		for _, n := range names {
			role, err := a.auth.Role(n)
			if err != nil {
				a.writeError(w, r, err)
				return
			}
			out.Roles = append(out.Roles, role)
		}
		json.NewEncoder(w).Encode(out)
	default:
		a.role(w, r, name)
	}
}

func (a *api) role(w http.ResponseWriter, r *http.Request, name string) {
	if !allow(w, r, http.MethodGet, http.MethodPut, http.MethodDelete) || !a.rootOnly(w, r) {
		return
	}
	switch r.Method {
	case http.MethodGet:
		role, err := a.auth.Role(name)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		json.NewEncoder(w).Encode(role)
	case http.MethodPut:
		var in v2auth.Role
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			a.writeError(w, r, httpError{Message: "Invalid JSON in request body.", status: http.StatusBadRequest})
			return
		}
		if in.Role != name {
			a.writeError(w, r, httpError{Message: "Role JSON name does not match the name in the URL", status: http.StatusBadRequest})
			return
		}
		out, status := in, http.StatusCreated
		if in.Grant.IsEmpty() && in.Revoke.IsEmpty() {
			if err := a.auth.CreateRole(in); err != nil {
				a.writeError(w, r, err)
				return
			}
		} else {
			if !in.Permissions.IsEmpty() {
				a.writeError(w, r, httpError{Message: "Role JSON contains both permissions and grant/revoke", status: http.StatusBadRequest})
				return
			}
			var err error
			if out, err = a.auth.UpdateRole(in); err != nil {
				a.writeError(w, r, err)
				return
			}
			status = http.StatusOK
		}
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(out)
	case http.MethodDelete:
		if err := a.auth.DeleteRole(name); err != nil {
			a.writeError(w, r, err)
		}
	}
}

// userWithRoles is a user as the API lists it: its roles in full.
type userWithRoles struct {
	User  string        `json:"user"`
	Roles []v2auth.Role `json:"roles,omitempty"`
}

// withRoles is u with its roles in full; a role that cannot be read is left out of a list
// (skipMissing), and fails a single user's answer, as upstream.
func (a *api) withRoles(u v2auth.User, skipMissing bool) (userWithRoles, error) {
	uw := userWithRoles{User: u.User}
	for _, name := range u.Roles {
		role, err := a.auth.Role(name)
		if err != nil && !skipMissing {
			return uw, err
		}
		if err == nil {
			uw.Roles = append(uw.Roles, role)
		}
	}
	return uw, nil
}

// users serves /v2/auth/users and /v2/auth/users/<name>.
func (a *api) users(w http.ResponseWriter, r *http.Request) {
	name, ok := authPath(r.URL.Path)
	switch {
	case !ok:
		a.writeError(w, r, httpError{Message: "Invalid path", status: http.StatusBadRequest})
	case name == "":
		if !allow(w, r, http.MethodGet) || !a.rootOnly(w, r) {
			return
		}
		names, err := a.auth.Users()
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		var out struct {
			Users []userWithRoles `json:"users"`
		}
		for _, n := range names {
			u, err := a.auth.User(n)
			if err != nil {
				a.writeError(w, r, err)
				return
			}
			uw, _ := a.withRoles(u, true)
			out.Users = append(out.Users, uw)
		}
		json.NewEncoder(w).Encode(out)
	default:
		a.user(w, r, name)
	}
}

func (a *api) user(w http.ResponseWriter, r *http.Request, name string) {
	if !allow(w, r, http.MethodGet, http.MethodPut, http.MethodDelete) || !a.rootOnly(w, r) {
		return
	}
	switch r.Method {
	case http.MethodGet:
		u, err := a.auth.User(name)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		uw, err := a.withRoles(u, false)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		json.NewEncoder(w).Encode(uw)
	case http.MethodPut:
		var in v2auth.User
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			a.writeError(w, r, httpError{Message: "Invalid JSON in request body.", status: http.StatusBadRequest})
			return
		}
		if in.User != name {
			a.writeError(w, r, httpError{Message: "User JSON name does not match the name in the URL", status: http.StatusBadRequest})
			return
		}
		var out v2auth.User
		var created bool
		var err error
		switch {
		case len(in.Grant) == 0 && len(in.Revoke) == 0 && len(in.Roles) != 0:
			out, err = a.auth.CreateUser(in)
		case len(in.Grant) == 0 && len(in.Revoke) == 0:
			out, created, err = a.auth.CreateOrUpdateUser(in)
		case len(in.Roles) != 0:
			err = httpError{Message: "User JSON contains both roles and grant/revoke", status: http.StatusBadRequest}
		default:
			out, err = a.auth.UpdateUser(in)
		}
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		if created {
			w.WriteHeader(http.StatusCreated)
		} else {
			w.WriteHeader(http.StatusOK)
		}
		out.Password = ""
		json.NewEncoder(w).Encode(out)
	case http.MethodDelete:
		if err := a.auth.DeleteUser(name); err != nil {
			a.writeError(w, r, err)
		}
	}
}

// enable serves /v2/auth/enable: GET says whether auth is on, PUT turns it on, DELETE off.
func (a *api) enable(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet, http.MethodPut, http.MethodDelete) {
		return
	}
	if r.Method != http.MethodGet && !a.rootAccess(r) {
		writeNoAuth(w)
		return
	}
	a.clusterHeader(w)
	w.Header().Set("Content-Type", "application/json")
	switch r.Method {
	case http.MethodGet:
		json.NewEncoder(w).Encode(struct {
			Enabled bool `json:"enabled"`
		}{a.auth.Enabled()})
	case http.MethodPut:
		if err := a.auth.Enable(); err != nil {
			a.writeError(w, r, err)
		}
	case http.MethodDelete:
		if err := a.auth.Disable(); err != nil {
			a.writeError(w, r, err)
		}
	}
}
