package transport

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

func TestMsgAppV2RoundTrip(t *testing.T) {
	ents := func(from, n, term uint64) []raftpb.Entry {
		var es []raftpb.Entry
		for i := uint64(0); i < n; i++ {
			es = append(es, raftpb.Entry{Index: from + i, Term: term, Data: []byte{byte(i)}})
		}
		return es
	}
	msgs := []raftpb.Message{
		{Type: raftpb.MsgApp, From: 1, To: 2, Term: 3, LogTerm: 3, Index: 10, Entries: ents(11, 2, 3), Commit: 10},
		// Continues where the first ended, same term: the compact form.
		{Type: raftpb.MsgApp, From: 1, To: 2, Term: 3, LogTerm: 3, Index: 12, Entries: ents(13, 3, 3), Commit: 12},
		linkHeartbeat,
		{Type: raftpb.MsgApp, From: 1, To: 2, Term: 3, LogTerm: 3, Index: 15, Commit: 15},
		// A gap: the full form again.
		{Type: raftpb.MsgApp, From: 1, To: 2, Term: 4, LogTerm: 3, Index: 20, Entries: ents(21, 1, 4), Commit: 18},
		{Type: raftpb.MsgHeartbeat, From: 1, To: 2, Term: 4, Commit: 18},
	}
	var buf bytes.Buffer
	enc := &msgAppV2Encoder{w: &buf}
	var kinds []byte
	for i := range msgs {
		before := buf.Len()
		if err := enc.encode(&msgs[i]); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, buf.Bytes()[before])
	}
	if want := []byte{msgAppV2Message, msgAppV2Entries, msgAppV2Heartbeat, msgAppV2Entries, msgAppV2Message, msgAppV2Message}; !bytes.Equal(kinds, want) {
		t.Fatalf("encodings %v, want %v", kinds, want)
	}
	dec := &msgAppV2Decoder{r: &buf, local: 2, remote: 1}
	for i, want := range msgs {
		got, err := dec.decode()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if len(want.Entries) == 0 {
			want.Entries = nil
		}
		if len(got.Entries) == 0 {
			got.Entries = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("message %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
}

func TestMessageCodecLimits(t *testing.T) {
	m := raftpb.Message{Type: raftpb.MsgSnap, From: 1, To: 2, Snapshot: &raftpb.Snapshot{Data: make([]byte, 100)}}
	var buf bytes.Buffer
	if err := (&messageEncoder{w: &buf}).encode(&m); err != nil {
		t.Fatal(err)
	}
	if n := binary.BigEndian.Uint64(buf.Bytes()); n != uint64(m.Size()) {
		t.Fatalf("length prefix %d, message is %d bytes", n, m.Size())
	}
	if _, err := (&messageDecoder{r: bytes.NewReader(buf.Bytes()), limit: 50}).decode(); err != errTooLarge {
		t.Fatalf("over the limit: %v", err)
	}
	got, err := (&messageDecoder{r: bytes.NewReader(buf.Bytes())}).decode()
	if err != nil || got.Type != raftpb.MsgSnap || len(got.Snapshot.Data) != 100 {
		t.Fatalf("decode: %+v %v", got, err)
	}
	for _, bad := range [][]byte{{1, 0, 0, 0, 0, 0, 0, 0, 9}, {0xff}, {2, 0, 0, 0, 0, 0, 0, 0, 50, 1}} {
		if _, err := (&msgAppV2Decoder{r: bytes.NewReader(bad)}).decode(); err == nil {
			t.Errorf("decoded % x without error", bad)
		}
	}
}
