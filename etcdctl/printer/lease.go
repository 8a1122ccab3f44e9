package printer

import (
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func (p *Printer) leaseID(id int64) {
	if p.Hex {
		p.Printf("\"ID\" : %016x\n", id)
	} else {
		p.Printf("\"ID\" : %d\n", id)
	}
}

// Grant is a lease grant answer.
type Grant struct{ R *clientv3.LeaseGrantResponse }

func (g Grant) Simple(p *Printer) { p.Printf("lease %016x granted with TTL(%ds)\n", g.R.ID, g.R.TTL) }
func (g Grant) JSON() any         { return g.R }
func (g Grant) Fields(p *Printer) {
	p.header(g.R.ResponseHeader)
	p.leaseID(int64(g.R.ID))
	p.Printf("\"TTL\" : %d\n", g.R.TTL)
}

// Revoke is a lease revoke answer.
type Revoke struct {
	ID int64
	R  *pb.LeaseRevokeResponse
}

func (r Revoke) Simple(p *Printer)      { p.Printf("lease %016x revoked\n", r.ID) }
func (r Revoke) JSON() any              { return r.R }
func (r Revoke) Proto() ([]byte, error) { return r.R.Marshal() }
func (r Revoke) Fields(p *Printer)      { p.header(r.R.Header) }

// KeepAlive is one keep-alive answer.
type KeepAlive struct {
	R *clientv3.LeaseKeepAliveResponse
}

func (k KeepAlive) Simple(p *Printer) {
	p.Printf("lease %016x keepalived with TTL(%d)\n", k.R.ID, k.R.TTL)
}
func (k KeepAlive) JSON() any { return k.R }
func (k KeepAlive) Fields(p *Printer) {
	p.header(k.R.ResponseHeader)
	p.leaseID(int64(k.R.ID))
	p.Printf("\"TTL\" : %d\n", k.R.TTL)
}

// TimeToLive is a lease time-to-live answer.
type TimeToLive struct {
	R    *clientv3.LeaseTimeToLiveResponse
	Keys bool
}

func (t TimeToLive) Simple(p *Printer) {
	if t.R.GrantedTTL == 0 && t.R.TTL == -1 {
		p.Printf("lease %016x already expired\n", t.R.ID)
		return
	}
	txt := fmt.Sprintf("lease %016x granted with TTL(%ds), remaining(%ds)", t.R.ID, t.R.GrantedTTL, t.R.TTL)
	if t.Keys {
		ks := make([]string, len(t.R.Keys))
		for i, k := range t.R.Keys {
			ks[i] = string(k)
		}
		txt += fmt.Sprintf(", attached keys(%v)", ks)
	}
	p.Println(txt)
}
func (t TimeToLive) JSON() any { return t.R }
func (t TimeToLive) Fields(p *Printer) {
	p.header(t.R.ResponseHeader)
	p.leaseID(int64(t.R.ID))
	p.Printf("\"TTL\" : %d\n\"GrantedTTL\" : %d\n", t.R.TTL, t.R.GrantedTTL)
	for _, k := range t.R.Keys {
		p.Printf("\"Key\" : %q\n", string(k))
	}
}

// Leases is a lease list answer.
type Leases struct{ R *clientv3.LeaseLeasesResponse }

func (l Leases) Simple(p *Printer) {
	p.Printf("found %d leases\n", len(l.R.Leases))
	for _, s := range l.R.Leases {
		p.Printf("%016x\n", s.ID)
	}
}
func (l Leases) JSON() any { return l.R }
func (l Leases) Fields(p *Printer) {
	p.header(l.R.ResponseHeader)
	for _, s := range l.R.Leases {
		p.leaseID(int64(s.ID))
	}
}
