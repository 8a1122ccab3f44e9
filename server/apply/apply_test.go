package apply_test

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"etcdx/server/apply"
	"etcdx/server/backend"
	"etcdx/server/lease"
	"etcdx/server/mvcc"
	"etcdx/server/schema"
)

// state is a real store and lessor on a file of their own, holding the fixture every test
// starts from (revision 1 is the empty store):
//
//	rev 2  put a=1
//	rev 3  put b=2 on lease 100
//	rev 4  put a=3                 a: create 2, mod 4, version 2
//	rev 5  put c=5
type state struct {
	t   *testing.T
	be  *backend.Backend
	kv  *mvcc.Store
	les *lease.Lessor
}

func newState(t *testing.T) *state {
	t.Helper()
	be, err := backend.Open(backend.Config{Path: filepath.Join(t.TempDir(), "db"), Buckets: schema.Buckets})
	if err != nil {
		t.Fatal(err)
	}
	les, err := lease.New(be, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := mvcc.Open(be, slog.Default(), les)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kv.Close(); be.Close() })
	st := &state{t: t, be: be, kv: kv, les: les}
	b := be.Batch()
	if _, err := les.Grant(b, 100, 60); err != nil {
		t.Fatal(err)
	}
	if err := b.Unlock(); err != nil {
		t.Fatal(err)
	}
	st.mustPut("a", "1", 0)
	st.mustPut("b", "2", 100)
	st.mustPut("a", "3", 0)
	st.mustPut("c", "5", 0)
	return st
}

func (st *state) mustPut(k, v string, leaseID int64) {
	st.t.Helper()
	if _, err := st.put(&pb.PutRequest{Key: []byte(k), Value: []byte(v), Lease: leaseID}); err != nil {
		st.t.Fatal(err)
	}
}

// compact compacts the store at rev and waits until the backend is clean.
func (st *state) compact(rev int64) {
	st.t.Helper()
	done, err := st.kv.Compact(rev)
	if err != nil {
		st.t.Fatal(err)
	}
	<-done
}

func (st *state) put(r *pb.PutRequest) (*pb.PutResponse, error) {
	w := st.kv.Write()
	defer w.End()
	return apply.Put(w, st.les, r)
}

func (st *state) deleteRange(r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	w := st.kv.Write()
	defer w.End()
	return apply.DeleteRange(w, r)
}

// txn applies r as the apply loop does: a half-applied transaction is aborted, so a test that
// gets ErrHalfApplied has found a bug (its batch would be thrown away and the member stopped).
func (st *state) txn(r *pb.TxnRequest) (*pb.TxnResponse, error) {
	w := st.kv.Write()
	resp, err := apply.Txn(w, st.les, r)
	if errors.Is(err, apply.ErrHalfApplied) {
		w.Abort(err)
		st.t.Fatalf("half applied: %v", err)
	}
	if err := w.End(); err != nil {
		st.t.Fatal(err)
	}
	return resp, err
}

func (st *state) rangeAt(r *pb.RangeRequest) (*pb.RangeResponse, error) {
	v := st.kv.Read()
	defer v.End()
	return apply.Range(v, r)
}

// kvs renders key-values as key=value@create/mod/version, or key@... for keys only.
func kvs(list []*mvccpb.KeyValue) string {
	out := ""
	for _, kv := range list {
		if out != "" {
			out += " "
		}
		out += string(kv.Key)
		if kv.Value != nil {
			out += "=" + string(kv.Value)
		}
		out += fmt.Sprintf("@%d/%d/%d", kv.CreateRevision, kv.ModRevision, kv.Version)
		if kv.Lease != 0 {
			out += fmt.Sprintf("+%d", kv.Lease)
		}
	}
	return out
}

// rangeResult renders a range's answer: header revision, count, more and key-values.
func rangeResult(r *pb.RangeResponse, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	s := fmt.Sprintf("rev=%d count=%d", r.Header.Revision, r.Count)
	if r.More {
		s += " more"
	}
	if len(r.Kvs) > 0 {
		s += " " + kvs(r.Kvs)
	}
	return s
}
