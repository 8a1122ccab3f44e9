package printer

import (
	"errors"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/status"

	"etcdx/pkg/buildinfo"
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

// JSON is the client library's response as is, as upstream prints it; from 3.7 the library's
// response also has the cancel reason.
func (w Watch) JSON() any {
	if !buildinfo.AtLeast("3.7") {
		return &w.R
	}
	return struct {
		*clientv3.WatchResponse
		CancelReason string
	}{&w.R, cancelReason(&w.R)}
}

// cancelReason is the server's reason for cancelling the watch, which the 3.6 client library
// keeps only inside the response's error.
func cancelReason(r *clientv3.WatchResponse) string {
	if !r.Canceled || r.CompactRevision != 0 {
		return ""
	}
	err := r.Err()
	if err == nil || errors.Is(err, rpctypes.ErrFutureRev) {
		return ""
	}
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}

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
