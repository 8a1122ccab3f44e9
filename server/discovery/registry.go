package discovery

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Prefix holds every token: /_etcd/registry/<token>/_config/size and
// /_etcd/registry/<token>/members/<member ID in hex>.
const Prefix = "/_etcd/registry"

// Errors carry upstream's texts: operators search for them.
var (
	ErrSizeNotFound = errors.New("discovery: size key not found")
	ErrBadSizeKey   = errors.New("discovery: size key is bad")
	ErrFullCluster  = errors.New("discovery: cluster is full")
	ErrInvalidURL   = errors.New("discovery: invalid peer URL")
	// ErrTokenExists is returned when creating a token that is already in use.
	ErrTokenExists = errors.New("discovery: token already exists")
)

// TokenPrefix is the prefix of every key of token (with a trailing slash, so token "a" does not
// cover token "ab").
func TokenPrefix(token string) string { return path.Join(Prefix, token) + "/" }

// SizeKey holds the expected cluster size as a decimal string.
func SizeKey(token string) string { return path.Join(Prefix, token, "_config", "size") }

// MembersPrefix is the prefix of the members' registration keys.
func MembersPrefix(token string) string { return path.Join(Prefix, token, "members") }

// MemberKey is where the member with id registers: its ID in lower-case hex without padding.
func MemberKey(token string, id uint64) string {
	return path.Join(MembersPrefix(token), strconv.FormatUint(id, 16))
}

// ValidToken refuses tokens that would escape or alias the token's key space.
func ValidToken(token string) error {
	switch {
	case token == "":
		return errors.New("discovery token is empty")
	case strings.ContainsAny(token, "/ \t\n"):
		return fmt.Errorf("discovery token %q must not contain '/' or white space", token)
	case token == "." || token == "..":
		return fmt.Errorf("discovery token %q is not allowed", token)
	}
	return nil
}

// Member is one registration: Value is the member's own part of --initial-cluster
// ("name=peerURL[,name=peerURL2]").
type Member struct {
	Key            string
	Value          string
	CreateRevision int64
}

// ID is the member ID encoded in the registration key.
func (m Member) ID() string { return path.Base(m.Key) }

// Name is the member name in the registration value.
func (m Member) Name() string {
	name, _, _ := strings.Cut(m.Value, "=")
	return name
}

// PeerURLs are the peer URLs in the registration value.
func (m Member) PeerURLs() []string {
	var urls []string
	for _, part := range strings.Split(m.Value, ",") {
		if _, u, ok := strings.Cut(part, "="); ok {
			urls = append(urls, u)
		}
	}
	return urls
}

// State is what the discovery cluster holds for one token at one revision.
type State struct {
	Token string
	// Size is the expected number of members; 0 when the size key is missing.
	Size int
	// Members are sorted by registration order (create revision); only the first Size count.
	Members []Member
	// Revision is the discovery cluster's revision the state was read at.
	Revision int64
}

// Complete reports whether enough members registered for the cluster to start.
func (s State) Complete() bool { return s.Size > 0 && len(s.Members) >= s.Size }

// Position is the index of the registration key in registration order, or -1.
func (s State) Position(key string) int {
	for i, m := range s.Members {
		if m.Key == key {
			return i
		}
	}
	return -1
}

// InitialCluster is the --initial-cluster of the first Size registered members.
func (s State) InitialCluster() (string, error) {
	n := len(s.Members)
	if s.Size < n {
		n = s.Size
	}
	parts := make([]string, 0, n)
	names, urls := map[string]string{}, map[string]string{}
	for _, m := range s.Members[:n] {
		if err := checkValue(m.Value); err != nil {
			return "", fmt.Errorf("%w: member %s: %v", ErrInvalidURL, m.ID(), err)
		}
		// Two registrations with one name or URL would merge into a member that cannot start.
		if other, dup := names[m.Name()]; dup {
			return "", fmt.Errorf("discovery: members %s and %s registered the same name %q", other, m.ID(), m.Name())
		}
		names[m.Name()] = m.ID()
		for _, u := range m.PeerURLs() {
			if other, dup := urls[u]; dup {
				return "", fmt.Errorf("discovery: members %s and %s registered the same peer URL %s", other, m.ID(), u)
			}
			urls[u] = m.ID()
		}
		parts = append(parts, m.Value)
	}
	return strings.Join(parts, ","), nil
}

// checkValue checks one registration value is "name=url[,name=url]" with one name.
func checkValue(v string) error {
	name := ""
	for _, part := range strings.Split(v, ",") {
		n, u, ok := strings.Cut(part, "=")
		if !ok || n == "" || u == "" {
			return fmt.Errorf("%q is not name=url", part)
		}
		if name != "" && n != name {
			return fmt.Errorf("%q holds more than one member name", v)
		}
		name = n
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return fmt.Errorf("%q is not an http(s) URL", u)
		}
	}
	return nil
}

// Read returns the token's state. A missing or malformed size key is ErrSizeNotFound or
// ErrBadSizeKey; the members are read at the same revision as the size.
func Read(ctx context.Context, c *clientv3.Client, token string) (State, error) {
	resp, err := c.Txn(ctx).Then(
		clientv3.OpGet(SizeKey(token)),
		clientv3.OpGet(MembersPrefix(token)+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend)),
	).Commit()
	if err != nil {
		return State{}, fmt.Errorf("read discovery token %s: %w", token, err)
	}
	st := State{Token: token, Revision: resp.Header.Revision}
	sizeKVs := resp.Responses[0].GetResponseRange().Kvs
	if len(sizeKVs) == 0 {
		return st, ErrSizeNotFound
	}
	size, err := strconv.Atoi(strings.TrimSpace(string(sizeKVs[0].Value)))
	if err != nil || size < 1 {
		return st, fmt.Errorf("%w: %q", ErrBadSizeKey, sizeKVs[0].Value)
	}
	st.Size = size
	// The range is sorted by create revision: registration order.
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		st.Members = append(st.Members, Member{Key: string(kv.Key), Value: strings.TrimSpace(string(kv.Value)), CreateRevision: kv.CreateRevision})
	}
	return st, nil
}

// Create makes a new token expecting size members. It refuses a token that already has a size.
func Create(ctx context.Context, c *clientv3.Client, token string, size int) error {
	if err := ValidToken(token); err != nil {
		return err
	}
	if size < 1 {
		return fmt.Errorf("cluster size must be at least 1, got %d", size)
	}
	key := SizeKey(token)
	resp, err := c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, strconv.Itoa(size))).Commit()
	if err != nil {
		return fmt.Errorf("create discovery token %s: %w", token, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: %s", ErrTokenExists, token)
	}
	return nil
}

// Delete removes every key of the token and reports how many there were.
func Delete(ctx context.Context, c *clientv3.Client, token string) (int64, error) {
	if err := ValidToken(token); err != nil {
		return 0, err
	}
	resp, err := c.Delete(ctx, TokenPrefix(token), clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("delete discovery token %s: %w", token, err)
	}
	return resp.Deleted, nil
}
