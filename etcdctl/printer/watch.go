package printer

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Watch is one response of a watch stream: its events, each with the previous pair when asked.
type Watch struct{ R clientv3.WatchResponse }

func (w Watch) Simple(p *Printer) {
	for _, ev := range w.R.Events {
		p.Println(ev.Type)
		if ev.PrevKv != nil {
			p.simpleKV(ev.PrevKv, false)
		}
		p.simpleKV(ev.Kv, false)
	}
}

// JSON is the client library's response as is, as upstream prints it.
func (w Watch) JSON() any { return &w.R }

func (w Watch) Proto() ([]byte, error) {
	evs := make([]*mvccpb.Event, len(w.R.Events))
	for i, ev := range w.R.Events {
		evs[i] = (*mvccpb.Event)(ev)
	}
	r := pb.WatchResponse{Header: &w.R.Header, Events: evs, CompactRevision: w.R.CompactRevision,
		Canceled: w.R.Canceled, Created: w.R.Created}
	return r.Marshal()
}

func (w Watch) Fields(p *Printer) {
	p.header(&w.R.Header)
	for _, ev := range w.R.Events {
		p.Printf("\"Type\" : %v\n", ev.Type)
		if ev.PrevKv != nil {
			p.fieldsKV("Prev", ev.PrevKv)
		}
		p.fieldsKV("", ev.Kv)
	}
}
