package printer

import (
	"etcdx/pkg/buildinfo"
	"fmt"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// MemberList is a member list answer.
type MemberList struct{ R *pb.MemberListResponse }

func (r MemberList) Table() ([]string, [][]string) {
	hdr := []string{"ID", "Status", "Name", "Peer Addrs", "Client Addrs", "Is Learner"}
	var rows [][]string
	for _, m := range r.R.Members {
		status := "started"
		if m.Name == "" {
			status = "unstarted"
		}
		rows = append(rows, []string{fmt.Sprintf("%x", m.ID), status, m.Name, strings.Join(m.PeerURLs, ","),
			strings.Join(m.ClientURLs, ","), strconv.FormatBool(m.IsLearner)})
	}
	return hdr, rows
}
func (r MemberList) Simple(p *Printer)      { p.rows(r) }
func (r MemberList) JSON() any              { return r.R }
func (r MemberList) Proto() ([]byte, error) { return r.R.Marshal() }
func (r MemberList) Fields(p *Printer) {
	p.header(r.R.Header)
	for _, m := range r.R.Members {
		p.id("ID", m.ID)
		p.Printf("\"Name\" : %q\n", m.Name)
		for _, u := range m.PeerURLs {
			p.Printf("\"PeerURL\" : %q\n", u)
		}
		for _, u := range m.ClientURLs {
			p.Printf("\"ClientURL\" : %q\n", u)
		}
		p.Printf("\"IsLearner\" : %v\n\n", m.IsLearner)
	}
}

// MemberChange is the answer to member add, remove, update or promote. Only simple output and
// the raw response formats exist for these, as upstream.
type MemberChange struct {
	Verb    string // "added", "removed from", "updated in", "promoted in"
	ID      uint64
	Learner bool
	Header  *pb.ResponseHeader
	Resp    interface{ Marshal() ([]byte, error) }
}

func (r MemberChange) Simple(p *Printer) {
	if r.Verb == "added" {
		as := " "
		if r.Learner && buildinfo.AtLeast("3.6") { // 3.5's etcdctl says "added to cluster" for a learner too
			as = " as learner "
		}
		p.Printf("Member %16x added%sto cluster %16x\n", r.ID, as, r.Header.ClusterId)
		return
	}
	p.Printf("Member %16x %s cluster %16x\n", r.ID, r.Verb, r.Header.ClusterId)
}
func (r MemberChange) JSON() any              { return r.Resp }
func (r MemberChange) Proto() ([]byte, error) { return r.Resp.Marshal() }

// EndpointHealth is one endpoint's health check.
type EndpointHealth struct {
	Ep     string `json:"endpoint"`
	Health bool   `json:"health"`
	Took   string `json:"took"`
	Error  string `json:"error,omitempty"`
}

// Health is the answer of endpoint health.
type Health []EndpointHealth

func (h Health) Simple(p *Printer) {
	for _, e := range h {
		if e.Error == "" {
			p.Printf("%s is healthy: successfully committed proposal: took = %v\n", e.Ep, e.Took)
		} else {
			fmt.Fprintf(p.Err, "%s is unhealthy: failed to commit proposal: %v\n", e.Ep, e.Error)
		}
	}
}
func (h Health) JSON() any { return []EndpointHealth(h) }
func (h Health) Table() ([]string, [][]string) {
	var rows [][]string
	for _, e := range h {
		rows = append(rows, []string{e.Ep, strconv.FormatBool(e.Health), e.Took, e.Error})
	}
	return []string{"endpoint", "health", "took", "error"}, rows
}
func (h Health) Fields(p *Printer) {
	for _, e := range h {
		p.Printf("\"Endpoint\" : %q\n\"Health\" : %v\n\"Took\" : %s\n\"Error\" : %s\n\n", e.Ep, e.Health, e.Took, e.Error)
	}
}

// EndpointStatus is one endpoint's status.
type EndpointStatus struct {
	Ep   string             `json:"Endpoint"`
	Resp *pb.StatusResponse `json:"Status"`
}

// Status is the answer of endpoint status.
type Status []EndpointStatus

func (s Status) Table() ([]string, [][]string) {
	hdr := []string{"endpoint", "ID", "version", "storage version", "db size", "in use", "percentage not in use", "quota",
		"is leader", "is learner", "raft term", "raft index", "raft applied index", "errors", "downgrade target version", "downgrade enabled"}
	var rows [][]string
	for _, e := range s {
		r := e.Resp
		notInUse := 0
		if r.DbSize > 0 {
			notInUse = int(100 - r.DbSizeInUse*100/r.DbSize)
		}
		rows = append(rows, []string{e.Ep, fmt.Sprintf("%x", r.Header.MemberId), r.Version, r.StorageVersion,
			humanize.Bytes(uint64(r.DbSize)), humanize.Bytes(uint64(r.DbSizeInUse)), fmt.Sprintf("%d%%", notInUse),
			humanize.Bytes(uint64(r.DbSizeQuota)), fmt.Sprint(r.Leader == r.Header.MemberId), fmt.Sprint(r.IsLearner),
			fmt.Sprint(r.RaftTerm), fmt.Sprint(r.RaftIndex), fmt.Sprint(r.RaftAppliedIndex), strings.Join(r.Errors, ", "),
			r.DowngradeInfo.GetTargetVersion(), strconv.FormatBool(r.DowngradeInfo.GetEnabled())})
	}
	return hdr, rows
}
func (s Status) Simple(p *Printer) { p.rows(s) }
func (s Status) JSON() any         { return []EndpointStatus(s) }
func (s Status) Fields(p *Printer) {
	for _, e := range s {
		r := e.Resp
		p.header(r.Header)
		p.Printf("\"Version\" : %q\n\"StorageVersion\" : %q\n\"DBSize\" : %d\n\"DBSizeInUse\" : %d\n\"DBSizeQuota\" : %d\n\"Leader\" : %d\n\"IsLearner\" : %v\n\"RaftIndex\" : %d\n\"RaftAppliedIndex\" : %d\n\"Errors\" : %v\n\"Endpoint\" : %q\n\"DowngradeTargetVersion\" : %q\n\"DowngradeEnabled\" : %v\n\n",
			r.Version, r.StorageVersion, r.DbSize, r.DbSizeInUse, r.DbSizeQuota, r.Leader, r.IsLearner, r.RaftIndex,
			r.RaftAppliedIndex, r.Errors, e.Ep, r.DowngradeInfo.GetTargetVersion(), r.DowngradeInfo.GetEnabled())
	}
}

// EndpointHashKV is one endpoint's HashKV.
type EndpointHashKV struct {
	Ep   string             `json:"Endpoint"`
	Resp *pb.HashKVResponse `json:"HashKV"`
}

// HashKV is the answer of endpoint hashkv.
type HashKV []EndpointHashKV

// withHashRevision: the hash revision is shown from 3.6, whose API added it.
func withHashRevision() bool { return buildinfo.AtLeast("3.6") }

func (h HashKV) Table() ([]string, [][]string) {
	var rows [][]string
	for _, e := range h {
		row := []string{e.Ep, fmt.Sprint(e.Resp.Hash)}
		if withHashRevision() {
			row = append(row, fmt.Sprint(e.Resp.HashRevision))
		}
		rows = append(rows, row)
	}
	if !withHashRevision() {
		return []string{"endpoint", "hash"}, rows
	}
	return []string{"endpoint", "hash", "hash_revision"}, rows
}
func (h HashKV) Simple(p *Printer) { p.rows(h) }
func (h HashKV) JSON() any {
	if withHashRevision() {
		return []EndpointHashKV(h)
	}
	out := make([]EndpointHashKV, len(h))
	for i, e := range h {
		r := *e.Resp
		r.HashRevision = 0 // omitted, as a 3.5 client does not know the field
		out[i] = EndpointHashKV{Ep: e.Ep, Resp: &r}
	}
	return out
}
func (h HashKV) Fields(p *Printer) {
	for _, e := range h {
		p.header(e.Resp.Header)
		p.Printf("\"Endpoint\" : %q\n\"Hash\" : %d\n", e.Ep, e.Resp.Hash)
		if withHashRevision() {
			p.Printf("\"HashRevision\" : %d\n", e.Resp.HashRevision)
		}
		p.Printf("\n")
	}
}

// Alarms is an alarm list or disarm answer.
type Alarms struct{ R *pb.AlarmResponse }

func (a Alarms) Simple(p *Printer) {
	for _, m := range a.R.Alarms {
		p.Printf("%+v\n", m)
	}
}
func (a Alarms) JSON() any              { return a.R }
func (a Alarms) Proto() ([]byte, error) { return a.R.Marshal() }
func (a Alarms) Fields(p *Printer) {
	p.header(a.R.Header)
	for _, m := range a.R.Alarms {
		p.id("MemberID", m.MemberID)
		p.Printf("\"AlarmType\" : %v\n\n", m.Alarm)
	}
}

// Downgrade is a downgrade validate/enable/cancel answer (simple output only, as upstream).
type Downgrade struct {
	Action string // "validate", "enable", "cancel"
	R      *pb.DowngradeResponse
}

func (d Downgrade) Simple(p *Printer) {
	p.Printf("Downgrade %s success, cluster version %s\n", d.Action, d.R.Version)
}

// MoveLeader is a leadership transfer answer (simple output only, as upstream).
type MoveLeader struct{ From, To uint64 }

func (m MoveLeader) Simple(p *Printer) {
	p.Printf("Leadership transferred from %x to %x\n", m.From, m.To)
}
