package reqrecord

import (
	"fmt"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"etcdx/pkg/rangestream"
)

// Call is one RPC as the proxy forwarded it. Unary calls have one request and one answer;
// a Watch or LeaseKeepAlive stream has one of each message it carried.
type Call struct {
	At       time.Duration `json:"at"` // since the recorder started
	Method   string        `json:"method"`
	Phase    string        `json:"phase,omitempty"` // set on the marks of Recorder.Mark (Method "phase")
	Requests []Message     `json:"requests,omitempty"`
	Answers  []Message     `json:"answers,omitempty"`
	Took     time.Duration `json:"took"`
	Err      string        `json:"err,omitempty"` // the gRPC code of a call that failed
}

// Message is the shape of one request or answer: what decides its cost on the member.
type Message struct {
	At    time.Duration `json:"at"`
	Bytes int           `json:"bytes"` // the encoded message
	// Key is the request's key (the first compare's for a Txn, the range start of a watch);
	// Span says what it covers: "" one key, "prefix", "from" (to the end of the keyspace) or "range".
	Key  string `json:"key,omitempty"`
	Span string `json:"span,omitempty"`
	// Shape lists the options that change the work: "limit=500 rev keys-only", a Txn's
	// "mod= ? put : range", a watch's "create progress-notify prev-kv", ...
	Shape string `json:"shape,omitempty"`
	// Count is kvs returned, events delivered, keys deleted, or a Txn's ops; ValueBytes the
	// values written (Put, Txn) or returned (Range, Watch).
	Count      int  `json:"count,omitempty"`
	ValueBytes int  `json:"valueBytes,omitempty"`
	Lease      bool `json:"lease,omitempty"` // a put with a lease attached
	// TTL is a LeaseGrant's, Revision a watch answer's header revision (progress notifications).
	TTL      int64 `json:"ttl,omitempty"`
	Revision int64 `json:"revision,omitempty"`
	WatchID  int64 `json:"watchID,omitempty"` // of a watch answer
}

// span names what [key, end) covers.
func span(key, end []byte) string {
	switch {
	case len(end) == 0:
		return ""
	case len(end) == 1 && end[0] == 0:
		return "from"
	case string(end) == prefixEnd(key):
		return "prefix"
	}
	return "range"
}

// prefixEnd is the range end that makes a range of every key starting with key.
func prefixEnd(key []byte) string {
	end := append([]byte(nil), key...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return string(end[:i+1])
		}
	}
	return "\x00"
}

func rangeShape(r *pb.RangeRequest) string {
	var s []string
	if r.Limit > 0 {
		s = append(s, fmt.Sprintf("limit=%d", r.Limit))
	}
	if r.Revision > 0 {
		s = append(s, "rev")
	}
	if r.Serializable {
		s = append(s, "serializable")
	}
	if r.KeysOnly {
		s = append(s, "keys-only")
	}
	if r.CountOnly {
		s = append(s, "count-only")
	}
	if r.SortOrder != pb.RangeRequest_NONE {
		s = append(s, "sort="+r.SortTarget.String()+"/"+r.SortOrder.String())
	}
	if r.MinModRevision > 0 || r.MaxModRevision > 0 || r.MinCreateRevision > 0 || r.MaxCreateRevision > 0 {
		s = append(s, "rev-filter")
	}
	return strings.Join(s, " ")
}

// compareShape is a compare as "mod=", "ver>", "value=", ...
func compareShape(c *pb.Compare) string {
	t := map[pb.Compare_CompareTarget]string{pb.Compare_VERSION: "ver", pb.Compare_CREATE: "create", pb.Compare_MOD: "mod", pb.Compare_VALUE: "value", pb.Compare_LEASE: "lease"}[c.Target]
	r := map[pb.Compare_CompareResult]string{pb.Compare_EQUAL: "=", pb.Compare_GREATER: ">", pb.Compare_LESS: "<", pb.Compare_NOT_EQUAL: "!="}[c.Result]
	return t + r
}

// opsShape is a Txn branch's ops by kind ("put", "range", "delete", "txn"), with the values it writes.
func opsShape(ops []*pb.RequestOp) (shape string, values int, lease bool) {
	var s []string
	for _, op := range ops {
		switch r := op.Request.(type) {
		case *pb.RequestOp_RequestPut:
			s = append(s, "put")
			values += len(r.RequestPut.Value)
			lease = lease || r.RequestPut.Lease != 0
		case *pb.RequestOp_RequestRange:
			s = append(s, strings.TrimSpace("range "+rangeShape(r.RequestRange)))
		case *pb.RequestOp_RequestDeleteRange:
			s = append(s, "delete")
		case *pb.RequestOp_RequestTxn:
			s = append(s, "txn")
		}
	}
	if len(s) == 0 {
		return "-", values, lease
	}
	return strings.Join(s, ","), values, lease
}

func describeRequest(method string, b []byte, at time.Duration) Message {
	m := Message{At: at, Bytes: len(b)}
	switch method {
	case "Range", "RangeStream":
		var r pb.RangeRequest
		if r.Unmarshal(b) == nil {
			m.Key, m.Span, m.Shape = string(r.Key), span(r.Key, r.RangeEnd), rangeShape(&r)
		}
	case "Put":
		var r pb.PutRequest
		if r.Unmarshal(b) == nil {
			m.Key, m.ValueBytes, m.Lease = string(r.Key), len(r.Value), r.Lease != 0
			if r.PrevKv {
				m.Shape = "prev-kv"
			}
		}
	case "DeleteRange":
		var r pb.DeleteRangeRequest
		if r.Unmarshal(b) == nil {
			m.Key, m.Span = string(r.Key), span(r.Key, r.RangeEnd)
			if r.PrevKv {
				m.Shape = "prev-kv"
			}
		}
	case "Txn":
		var r pb.TxnRequest
		if r.Unmarshal(b) == nil {
			var cmps []string
			for _, c := range r.Compare {
				cmps = append(cmps, compareShape(c))
			}
			then, v1, l1 := opsShape(r.Success)
			els, v2, l2 := opsShape(r.Failure)
			m.Shape = strings.Join(cmps, ",") + " ? " + then + " : " + els
			m.Count, m.ValueBytes, m.Lease = len(r.Success)+len(r.Failure), v1+v2, l1 || l2
			switch {
			case len(r.Compare) > 0:
				m.Key = string(r.Compare[0].Key)
			case len(r.Success) > 0:
				m.Key = opKey(r.Success[0])
			}
		}
	case "Compact":
		var r pb.CompactionRequest
		if r.Unmarshal(b) == nil && r.Physical {
			m.Shape = "physical"
		}
	case "LeaseGrant":
		var r pb.LeaseGrantRequest
		if r.Unmarshal(b) == nil {
			m.TTL = r.TTL
		}
	case "Watch":
		var r pb.WatchRequest
		if r.Unmarshal(b) == nil {
			switch u := r.RequestUnion.(type) {
			case *pb.WatchRequest_CreateRequest:
				c := u.CreateRequest
				s := []string{"create"}
				if c.StartRevision > 0 {
					s = append(s, "from-rev")
				}
				if c.ProgressNotify {
					s = append(s, "progress-notify")
				}
				if c.PrevKv {
					s = append(s, "prev-kv")
				}
				if len(c.Filters) > 0 {
					s = append(s, "filters")
				}
				if c.Fragment {
					s = append(s, "fragment")
				}
				m.Key, m.Span, m.Shape = string(c.Key), span(c.Key, c.RangeEnd), strings.Join(s, " ")
			case *pb.WatchRequest_CancelRequest:
				m.Shape = "cancel"
			case *pb.WatchRequest_ProgressRequest:
				m.Shape = "progress"
			}
		}
	}
	return m
}

func opKey(op *pb.RequestOp) string {
	switch r := op.Request.(type) {
	case *pb.RequestOp_RequestPut:
		return string(r.RequestPut.Key)
	case *pb.RequestOp_RequestRange:
		return string(r.RequestRange.Key)
	case *pb.RequestOp_RequestDeleteRange:
		return string(r.RequestDeleteRange.Key)
	}
	return ""
}

func kvBytes(kvs []*mvccpb.KeyValue) int {
	n := 0
	for _, kv := range kvs {
		n += len(kv.Value)
	}
	return n
}

func describeAnswer(method string, b []byte, at time.Duration) Message {
	m := Message{At: at, Bytes: len(b)}
	switch method {
	case "Range":
		var r pb.RangeResponse
		if r.Unmarshal(b) == nil {
			m.Count, m.ValueBytes = len(r.Kvs), kvBytes(r.Kvs)
			if r.More {
				m.Shape = "more"
			}
		}
	case "RangeStream":
		var r rangestream.Response
		if r.Unmarshal(b) == nil && r.RangeResponse != nil {
			m.Count, m.ValueBytes = len(r.RangeResponse.Kvs), kvBytes(r.RangeResponse.Kvs)
		}
	case "DeleteRange":
		var r pb.DeleteRangeResponse
		if r.Unmarshal(b) == nil {
			m.Count = int(r.Deleted)
		}
	case "Txn":
		var r pb.TxnResponse
		if r.Unmarshal(b) == nil {
			m.Shape = "else"
			if r.Succeeded {
				m.Shape = "then"
			}
			for _, op := range r.Responses {
				if rr := op.GetResponseRange(); rr != nil {
					m.Count += len(rr.Kvs)
					m.ValueBytes += kvBytes(rr.Kvs)
				}
			}
		}
	case "LeaseGrant":
		var r pb.LeaseGrantResponse
		if r.Unmarshal(b) == nil {
			m.TTL = r.TTL
		}
	case "Watch":
		var r pb.WatchResponse
		if r.Unmarshal(b) == nil {
			switch {
			case r.Created:
				m.Shape = "created"
			case r.Canceled:
				m.Shape = "canceled"
			case len(r.Events) == 0:
				m.Shape = "progress"
			default:
				m.Shape = "events"
			}
			if r.Header != nil {
				m.Revision = r.Header.Revision
			}
			m.WatchID = r.WatchId
			m.Count = len(r.Events)
			for _, ev := range r.Events {
				if ev.Kv != nil {
					m.ValueBytes += len(ev.Kv.Value)
				}
				if ev.PrevKv != nil {
					m.ValueBytes += len(ev.PrevKv.Value)
				}
			}
		}
	}
	return m
}

// ResourceKey is the Span of a request on a resource's own key ("/registry/pods", which holds
// nothing): kube-apiserver reads it to learn the current revision.
const ResourceKey = "resource key"

// isResourceKey tells whether key is a resource's own key rather than an object's.
func isResourceKey(key, prefix string) bool {
	rest, ok := strings.CutPrefix(key, prefix+"/")
	if !ok {
		return false
	}
	parts := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	return len(parts) == 1 || (len(parts) == 2 && strings.Contains(parts[0], "."))
}

// Resource names the kind of object a Kubernetes storage key holds: "/registry/pods/ns/name"
// is "pods", "/registry/apiextensions.k8s.io/customresourcedefinitions/x" is
// "apiextensions.k8s.io/customresourcedefinitions"; a key outside the prefix is itself.
func Resource(key, prefix string) string {
	rest, ok := strings.CutPrefix(key, prefix+"/")
	if !ok {
		if key == prefix {
			return "(all)"
		}
		return key
	}
	parts := strings.SplitN(rest, "/", 3)
	if strings.Contains(parts[0], ".") && len(parts) > 1 {
		return parts[0] + "/" + parts[1]
	}
	return parts[0]
}
