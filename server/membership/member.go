package membership

import (
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Member is stored as JSON in the members bucket (and in conf-change contexts), as upstream.
type Member struct {
	ID         uint64   `json:"id"`
	PeerURLs   []string `json:"peerURLs"`
	IsLearner  bool     `json:"isLearner,omitempty"`
	Name       string   `json:"name,omitempty"`
	ClientURLs []string `json:"clientURLs,omitempty"`
	// ServerVersion is the version the member last published; upstream keeps no such field and
	// ignores it when reading our files.
	ServerVersion string `json:"serverVersion,omitempty"`
}

// Started reports whether the member has published itself (a member added with `member add`
// has no name until its process starts).
func (m Member) Started() bool { return m.Name != "" }

// MemberID derives a member's ID from its peer URLs and the cluster token, the way upstream
// does, so the same flags give the same IDs.
func MemberID(peerURLs []string, token string) uint64 {
	urls := append([]string(nil), peerURLs...)
	sort.Strings(urls)
	b := []byte(strings.Join(urls, ""))
	b = append(b, []byte(token)...)
	h := sha1.Sum(b)
	return binary.BigEndian.Uint64(h[:8])
}

// AddedMemberID is how upstream names a member added at run time: its URLs and the time.
func AddedMemberID(peerURLs []string, now time.Time) uint64 {
	return MemberID(peerURLs, strconv.FormatInt(now.Unix(), 10))
}

// ClusterID derives the cluster ID from the sorted member IDs.
func ClusterID(ids []uint64) uint64 {
	s := append([]uint64(nil), ids...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	b := make([]byte, 8*len(s))
	for i, id := range s {
		binary.BigEndian.PutUint64(b[8*i:], id)
	}
	h := sha1.Sum(b)
	return binary.BigEndian.Uint64(h[:8])
}

// SameURLs reports whether two URL lists hold the same URLs in any order.
func SameURLs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(x)
	sort.Strings(y)
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// ParseURL checks a member URL (peer or client): http or https with host:port and no path, or
// a unix socket as upstream takes them, unix:// or unixs:// with the socket's name as host
// (unix://localhost:2379 is the file "localhost:2379") or, for listeners, as a path.
func ParseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("invalid URL %q: %w", s, err)
	}
	switch u.Scheme {
	case "http", "https":
	case "unix", "unixs":
		if u.Host == "" && u.Path == "" {
			return nil, fmt.Errorf("URL %q names no socket", s)
		}
		return u, nil
	default:
		return nil, fmt.Errorf("URL scheme must be http, https, unix, or unixs: %s", s)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("URL %q has no host:port", s)
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return nil, fmt.Errorf("URL %q: %w", s, err)
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("URL %q must not have a path", s)
	}
	return u, nil
}

// SocketPath is where a unix:// or unixs:// URL's socket lives, as upstream reads it.
func SocketPath(u *url.URL) string { return u.Host + u.Path }

// IsUnix says whether a URL names a unix socket.
func IsUnix(u *url.URL) bool { return u.Scheme == "unix" || u.Scheme == "unixs" }

// IsSecure says whether a URL asks for TLS.
func IsSecure(u *url.URL) bool { return u.Scheme == "https" || u.Scheme == "unixs" }
