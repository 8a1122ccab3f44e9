package printer

import (
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"etcdx/pkg/buildinfo"
)

// header prints the fields-format response header.
func (p *Printer) header(h *pb.ResponseHeader) {
	if h == nil {
		h = &pb.ResponseHeader{}
	}
	// 3.5 prints the revision even when the answer has none (the Cluster service's); 3.6 on
	// hide it then.
	old := !buildinfo.LevelAtLeast(buildinfo.Level, "3.6")
	if p.Hex {
		p.Printf("\"ClusterID\" : %x\n\"MemberID\" : %x\n", h.ClusterId, h.MemberId)
	} else {
		p.Printf("\"ClusterID\" : %d\n\"MemberID\" : %d\n", h.ClusterId, h.MemberId)
	}
	if h.Revision > 0 || old {
		p.Printf("\"Revision\" : %d\n", h.Revision)
	}
	p.Printf("\"RaftTerm\" : %d\n", h.RaftTerm)
}

func (p *Printer) fieldsKV(pfx string, kv *mvccpb.KeyValue) {
	p.Printf("\"%sKey\" : %q\n\"%sCreateRevision\" : %d\n\"%sModRevision\" : %d\n\"%sVersion\" : %d\n\"%sValue\" : %q\n",
		pfx, string(kv.Key), pfx, kv.CreateRevision, pfx, kv.ModRevision, pfx, kv.Version, pfx, string(kv.Value))
	if p.Hex {
		p.Printf("\"%sLease\" : %016x\n", pfx, kv.Lease)
	} else {
		p.Printf("\"%sLease\" : %d\n", pfx, kv.Lease)
	}
}

// simpleKV prints key and value lines (only the value with --print-value-only).
func (p *Printer) simpleKV(kv *mvccpb.KeyValue, valueOnly bool) {
	if !valueOnly {
		p.Println(p.Bytes(kv.Key))
	}
	p.Println(p.Bytes(kv.Value))
}

// Get is a range answer.
type Get struct {
	R         *pb.RangeResponse
	ValueOnly bool
}

func (g Get) Simple(p *Printer) {
	for _, kv := range g.R.Kvs {
		p.simpleKV(kv, g.ValueOnly)
	}
}
func (g Get) JSON() any              { return g.R }
func (g Get) Proto() ([]byte, error) { return g.R.Marshal() }
func (g Get) Fields(p *Printer) {
	p.header(g.R.Header)
	for _, kv := range g.R.Kvs {
		p.fieldsKV("", kv)
	}
	p.Printf("\"More\" : %v\n\"Count\" : %d\n", g.R.More, g.R.Count)
}

// Put is a put answer.
type Put struct{ R *pb.PutResponse }

func (r Put) Simple(p *Printer) {
	p.Println("OK")
	if r.R.PrevKv != nil {
		p.simpleKV(r.R.PrevKv, false)
	}
}
func (r Put) JSON() any              { return r.R }
func (r Put) Proto() ([]byte, error) { return r.R.Marshal() }
func (r Put) Fields(p *Printer) {
	p.header(r.R.Header)
	if r.R.PrevKv != nil {
		p.fieldsKV("Prev", r.R.PrevKv)
	}
}

// Del is a delete answer.
type Del struct{ R *pb.DeleteRangeResponse }

func (r Del) Simple(p *Printer) {
	p.Println(r.R.Deleted)
	for _, kv := range r.R.PrevKvs {
		p.simpleKV(kv, false)
	}
}
func (r Del) JSON() any              { return r.R }
func (r Del) Proto() ([]byte, error) { return r.R.Marshal() }
func (r Del) Fields(p *Printer) {
	p.header(r.R.Header)
	p.Printf("\"Deleted\" : %d\n", r.R.Deleted)
	for _, kv := range r.R.PrevKvs {
		p.fieldsKV("Prev", kv)
	}
}

// Txn is a transaction answer.
type Txn struct{ R *pb.TxnResponse }

func (r Txn) Simple(p *Printer) {
	if r.R.Succeeded {
		p.Println("SUCCESS")
	} else {
		p.Println("FAILURE")
	}
	for _, op := range r.R.Responses {
		p.Println("")
		if res, ok := opResult(op).(simpler); ok {
			res.Simple(p)
		} else {
			p.Printf("unexpected response %+v\n", op)
		}
	}
}
func (r Txn) JSON() any              { return r.R }
func (r Txn) Proto() ([]byte, error) { return r.R.Marshal() }
func (r Txn) Fields(p *Printer) {
	p.header(r.R.Header)
	p.Printf("\"Succeeded\" : %v\n", r.R.Succeeded)
	for _, op := range r.R.Responses {
		if res, ok := opResult(op).(fielder); ok {
			res.Fields(p)
		} else {
			p.Printf("\"Unknown\" : %q\n", fmt.Sprintf("%+v", op.Response))
		}
	}
}

// opResult is the printable result of one operation inside a transaction (nil if unknown).
func opResult(op *pb.ResponseOp) any {
	switch v := op.Response.(type) {
	case *pb.ResponseOp_ResponseDeleteRange:
		return Del{v.ResponseDeleteRange}
	case *pb.ResponseOp_ResponsePut:
		return Put{v.ResponsePut}
	case *pb.ResponseOp_ResponseRange:
		return Get{R: v.ResponseRange}
	}
	return nil
}
