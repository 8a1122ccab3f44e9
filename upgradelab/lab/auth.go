package lab

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The users a plan with "auth: true" runs with: root drives the workload and the steps (member
// changes, downgrades and hashes need it); the lab user may only read and write its prefix,
// and proves at the end that its permissions still hold.
const (
	labRootPassword = "upgradelab-root"
	labUser         = "upgradelab-user"
	labUserPassword = "upgradelab-user-pw"
	labRole         = "upgradelab-rw"
	labUserPrefix   = "/upgradelab-auth/"
)

// labAuth is the auth state at a run's start, as a user allowed everything described it: the
// one the run set up (root, the lab user), or the one a rehearsal's data brought.
type labAuth struct {
	endpoints      []string
	user, password string
	state          string
}

// enableAuth makes root and the lab user, grants the lab role, and turns auth on.
func enableAuth(ctx context.Context, endpoints []string) (*labAuth, error) {
	cli, err := newLabClient(endpoints, "", "")
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, step := range []struct {
		what string
		do   func() error
	}{
		{"add root", func() error { _, err := cli.UserAdd(ctx, "root", labRootPassword); return err }},
		{"add the root role", func() error { _, err := cli.RoleAdd(ctx, "root"); return err }},
		{"grant root the root role", func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err }},
		{"add " + labUser, func() error { _, err := cli.UserAdd(ctx, labUser, labUserPassword); return err }},
		{"add " + labRole, func() error { _, err := cli.RoleAdd(ctx, labRole); return err }},
		{"grant " + labRole + " " + labUserPrefix, func() error {
			_, err := cli.RoleGrantPermission(ctx, labRole, labUserPrefix, clientv3.GetPrefixRangeEnd(labUserPrefix), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		}},
		{"grant " + labUser + " " + labRole, func() error { _, err := cli.UserGrantRole(ctx, labUser, labRole); return err }},
		{"enable auth", func() error { _, err := cli.AuthEnable(ctx); return err }},
	} {
		if err := step.do(); err != nil {
			return nil, fmt.Errorf("auth setup: %s: %w", step.what, err)
		}
	}
	return recordAuth(ctx, endpoints, "root", labRootPassword)
}

// recordAuth describes the auth state as user sees it, to compare at the end of the run.
func recordAuth(ctx context.Context, endpoints []string, user, password string) (*labAuth, error) {
	a := &labAuth{endpoints: endpoints, user: user, password: password}
	var err error
	if a.state, err = a.describe(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// describe lists, as root, whether auth is on, every user with its roles and every role with
// its permissions.
func (a *labAuth) describe(ctx context.Context) (string, error) {
	cli, err := newLabClient(a.endpoints, a.user, a.password)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	var b strings.Builder
	st, err := cli.AuthStatus(ctx)
	if err != nil {
		return "", fmt.Errorf("auth status: %w", err)
	}
	fmt.Fprintf(&b, "enabled=%v\n", st.Enabled)
	users, err := cli.UserList(ctx)
	if err != nil {
		return "", fmt.Errorf("user list: %w", err)
	}
	for _, u := range users.Users {
		r, err := cli.UserGet(ctx, u)
		if err != nil {
			return "", fmt.Errorf("user get %s: %w", u, err)
		}
		fmt.Fprintf(&b, "user %s: %v\n", u, r.Roles)
	}
	roles, err := cli.RoleList(ctx)
	if err != nil {
		return "", fmt.Errorf("role list: %w", err)
	}
	for _, name := range roles.Roles {
		r, err := cli.RoleGet(ctx, name)
		if err != nil {
			return "", fmt.Errorf("role get %s: %w", name, err)
		}
		var perms []string
		for _, p := range r.Perm {
			perms = append(perms, fmt.Sprintf("%s[%q,%q)", p.PermType, p.Key, p.RangeEnd))
		}
		sort.Strings(perms)
		fmt.Fprintf(&b, "role %s: %v\n", name, perms)
	}
	return b.String(), nil
}

// unchanged checks that users, roles and permissions are as they were recorded.
func (a *labAuth) unchanged(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	now, err := a.describe(ctx)
	if err != nil {
		return err
	}
	if now != a.state {
		return fmt.Errorf("auth state changed during the run:\n--- at the start ---\n%s--- now ---\n%s", a.state, now)
	}
	return nil
}

// verify checks that users, roles and permissions are as they were set up, that the lab user
// still logs in, may write its prefix and is refused elsewhere, and that a caller without
// credentials is refused.
func (a *labAuth) verify(ctx context.Context) error {
	if err := a.unchanged(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	user, err := newLabClient(a.endpoints, labUser, labUserPassword)
	if err != nil {
		return err
	}
	defer user.Close()
	if _, err := user.Put(ctx, labUserPrefix+"check", "v"); err != nil {
		return fmt.Errorf("%s writing its prefix: %w", labUser, err)
	}
	if _, err := user.Put(ctx, "/outside", "v"); !errors.Is(rpctypes.Error(err), rpctypes.ErrPermissionDenied) {
		return fmt.Errorf("%s writing outside its prefix: got %v, want permission denied", labUser, err)
	}
	anon, err := newLabClient(a.endpoints, "", "")
	if err != nil {
		return err
	}
	defer anon.Close()
	if _, err := anon.Get(ctx, labUserPrefix+"check"); !errors.Is(rpctypes.Error(err), rpctypes.ErrUserEmpty) {
		return fmt.Errorf("reading without credentials: got %v, want user name is empty", err)
	}
	return nil
}
