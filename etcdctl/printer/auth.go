package printer

import (
	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// AuthMessage is an auth change's answer: its simple line (upstream's wording), the response
// for json and protobuf, and the header for fields.
type AuthMessage struct {
	Line   string
	R      interface{ Marshal() ([]byte, error) }
	Header *pb.ResponseHeader
}

func (a AuthMessage) Simple(p *Printer)      { p.Println(a.Line) }
func (a AuthMessage) JSON() any              { return a.R }
func (a AuthMessage) Proto() ([]byte, error) { return a.R.Marshal() }
func (a AuthMessage) Fields(p *Printer)      { p.header(a.Header) }

// AuthStatus is auth status's answer (no fields format, as upstream).
type AuthStatus struct{ R *pb.AuthStatusResponse }

func (a AuthStatus) Simple(p *Printer) {
	p.Println("Authentication Status:", a.R.Enabled)
	p.Println("AuthRevision:", a.R.AuthRevision)
}
func (a AuthStatus) JSON() any              { return a.R }
func (a AuthStatus) Proto() ([]byte, error) { return a.R.Marshal() }

// UserGet is user get's answer (no fields format, as upstream).
type UserGet struct {
	Name string
	R    *pb.AuthUserGetResponse
}

func (u UserGet) Simple(p *Printer) {
	p.Printf("User: %s\nRoles:", u.Name)
	for _, r := range u.R.Roles {
		p.Printf(" %s", r)
	}
	p.Println()
}
func (u UserGet) JSON() any              { return u.R }
func (u UserGet) Proto() ([]byte, error) { return u.R.Marshal() }

// Names is user list's or role list's answer: one name a line. Role lists have fields.
type Names struct {
	Names  []string
	R      interface{ Marshal() ([]byte, error) }
	Header *pb.ResponseHeader
	// Field names the list in the fields format ("Roles"); empty: no fields format.
	Field string
}

func (n Names) Simple(p *Printer) {
	for _, s := range n.Names {
		p.Println(s)
	}
}
func (n Names) JSON() any              { return n.R }
func (n Names) Proto() ([]byte, error) { return n.R.Marshal() }

// namesFields is Names with the fields format.
type namesFields struct{ Names }

func (n namesFields) Fields(p *Printer) {
	p.header(n.Header)
	p.Printf(`"%s" :`, n.Field)
	for _, s := range n.Names.Names {
		p.Printf(" %q", s)
	}
	p.Println()
}

// List picks the Names printer: with the fields format when Field is set.
func List(n Names) any {
	if n.Field != "" {
		return namesFields{n}
	}
	return n
}

// RoleGet is role get's answer: the keys the role may read, then those it may write.
type RoleGet struct {
	Name string
	R    *pb.AuthRoleGetResponse
}

func (r RoleGet) Simple(p *Printer) {
	p.Printf("Role %s\n", r.Name)
	if r.Name == "root" && r.R.Perm == nil {
		p.Println("KV Read:\n\t[, <open ended>\nKV Write:\n\t[, <open ended>")
		return
	}
	for _, section := range []struct {
		title string
		types []authpb.Permission_Type
	}{{"KV Read:", []authpb.Permission_Type{authpb.READ, authpb.READWRITE}}, {"KV Write:", []authpb.Permission_Type{authpb.WRITE, authpb.READWRITE}}} {
		p.Println(section.title)
		for _, perm := range r.R.Perm {
			if perm.PermType != section.types[0] && perm.PermType != section.types[1] {
				continue
			}
			p.Println("\t" + PermRange(string(perm.Key), string(perm.RangeEnd)))
		}
	}
}

// PermRange words a permission's keys as upstream does: the key; [key, end); [key, <open
// ended>; with "(prefix key)" when end is key's prefix end.
func PermRange(key, end string) string {
	if end == "" {
		return key
	}
	s := "[" + key + ", " + end + ")"
	if end == "\x00" {
		s = "[" + key + ", <open ended>"
	}
	if key != "" && clientv3.GetPrefixRangeEnd(key) == end {
		s += " (prefix " + key + ")"
	}
	return s
}
func (r RoleGet) JSON() any              { return r.R }
func (r RoleGet) Proto() ([]byte, error) { return r.R.Marshal() }
func (r RoleGet) Fields(p *Printer) {
	p.header(r.R.Header)
	for _, perm := range r.R.Perm {
		p.Println(`"PermType" : `, perm.PermType.String())
		p.Printf("\"Key\" : %q\n\"RangeEnd\" : %q\n", string(perm.Key), string(perm.RangeEnd))
	}
}
