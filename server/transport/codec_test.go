package transport

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
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
	enc := &msgAppV2Encoder{pieces: pieces{w: &buf}}
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

// TestMsgAppV2ThroughSmallBuffer writes MsgApps whose entries are smaller and bigger than the
// stream's buffer (marshalled into its free space or into scratch) and checks the bytes against
// the format written out by hand, then that the reader gets the messages back.
func TestMsgAppV2ThroughSmallBuffer(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 47))
	entry := func(index uint64, size int) raftpb.Entry {
		e := raftpb.Entry{Index: index, Term: 2, Data: make([]byte, size)}
		for i := range e.Data {
			e.Data[i] = byte(rng.Uint32())
		}
		return e
	}
	msgs := []raftpb.Message{
		{Type: raftpb.MsgApp, From: 1, To: 2, Term: 2, LogTerm: 2, Index: 9, Entries: []raftpb.Entry{entry(10, 100)}, Commit: 9},
		{Type: raftpb.MsgApp, From: 1, To: 2, Term: 2, LogTerm: 2, Index: 10, Commit: 10,
			Entries: []raftpb.Entry{entry(11, 3000), entry(12, 9000), entry(13, 10), entry(14, 5000)}},
	}
	var want bytes.Buffer
	full, _ := msgs[0].Marshal()
	want.WriteByte(msgAppV2Message)
	want.Write(binary.BigEndian.AppendUint64(nil, uint64(len(full))))
	want.Write(full)
	want.WriteByte(msgAppV2Entries)
	want.Write(binary.BigEndian.AppendUint64(nil, uint64(len(msgs[1].Entries))))
	for _, e := range msgs[1].Entries {
		b, _ := e.Marshal()
		want.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		want.Write(b)
	}
	want.Write(binary.BigEndian.AppendUint64(nil, msgs[1].Commit))

	var got bytes.Buffer
	bw := bufio.NewWriterSize(&got, 4096)
	enc := &msgAppV2Encoder{pieces: pieces{w: bw}}
	for i := range msgs {
		if err := enc.encode(&msgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("stream of %d bytes differs from the %d bytes of the format", got.Len(), want.Len())
	}
	dec := &msgAppV2Decoder{r: &got, local: 2, remote: 1}
	for i, w := range msgs {
		m, err := dec.decode()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !reflect.DeepEqual(m, w) {
			t.Fatalf("message %d differs after the round trip", i)
		}
	}
}

// TestMsgAppV2EncodeAllocatesNothing pins why the encoder writes piece by piece: a MsgApp of
// entries bigger than the stream's buffer costs no allocation once the scratch has grown.
func TestMsgAppV2EncodeAllocatesNothing(t *testing.T) {
	ents := make([]raftpb.Entry, 50)
	for i := range ents {
		ents[i] = raftpb.Entry{Index: uint64(i + 1), Term: 1, Data: make([]byte, 20000)}
	}
	enc := &msgAppV2Encoder{pieces: pieces{w: bufio.NewWriterSize(io.Discard, 64<<10)}}
	m := raftpb.Message{Type: raftpb.MsgApp, Term: 1, LogTerm: 1, Entries: ents, Commit: 1}
	if err := enc.encode(&m); err != nil { // the full form, once
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(20, func() {
		m.Index = enc.index
		if err := enc.encode(&m); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per MsgApp of 50 entries of 20 KB", allocs)
	}
}

func TestMessageCodecLimits(t *testing.T) {
	m := raftpb.Message{Type: raftpb.MsgSnap, From: 1, To: 2, Snapshot: &raftpb.Snapshot{Data: make([]byte, 100)}}
	var buf bytes.Buffer
	if err := (&messageEncoder{pieces{w: &buf}}).encode(&m); err != nil {
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

// TestDecodeEntryAsRaftpb holds decodeEntry to raftpb's own Unmarshal: the same entry from the
// same bytes, for entries of every shape (empty and absent data, big numbers, each type), for
// entries with fields raftpb does not know, and errors for bytes raftpb refuses.
func TestDecodeEntryAsRaftpb(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 1))
	var cases [][]byte
	for i := 0; i < 500; i++ {
		e := raftpb.Entry{Term: rng.Uint64() >> rng.IntN(64), Index: rng.Uint64() >> rng.IntN(64), Type: raftpb.EntryType(rng.IntN(3))}
		switch rng.IntN(3) {
		case 0: // no data
		case 1:
			e.Data = []byte{}
		default:
			e.Data = make([]byte, rng.IntN(3000))
			for j := range e.Data {
				e.Data[j] = byte(rng.Uint32())
			}
		}
		b, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, b)
	}
	// A field raftpb does not know (7, bytes) and a varint one (9), before and after the data.
	unknown := protowire.AppendTag(nil, 7, protowire.BytesType)
	unknown = protowire.AppendBytes(unknown, []byte("later field"))
	unknown = protowire.AppendTag(unknown, 9, protowire.VarintType)
	unknown = protowire.AppendVarint(unknown, 1<<40)
	withData, _ := (&raftpb.Entry{Term: 2, Index: 5, Data: []byte("put")}).Marshal()
	cases = append(cases, append(append([]byte{}, unknown...), withData...), append(append([]byte{}, withData...), unknown...))
	// A negative type, as a 10-byte varint.
	cases = append(cases, protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), uint64(1<<64-1)))
	for i, b := range cases {
		var want, got raftpb.Entry
		if err := want.Unmarshal(b); err != nil {
			t.Fatalf("case %d: raftpb: %v", i, err)
		}
		if err := decodeEntry(b, &got); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if len(want.Data) == 0 && len(got.Data) == 0 && (want.Data == nil) == (got.Data == nil) {
			want.Data, got.Data = nil, nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
	bad := [][]byte{
		{0x08},       // type without its value
		{0x22, 0x05}, // data shorter than its length
		{0x0a, 0x00}, // type as bytes
		{0x20, 0x01}, // data as a varint
		{0x80},       // a truncated tag
	}
	for _, b := range bad {
		var want, got raftpb.Entry
		if err := want.Unmarshal(b); err == nil {
			t.Fatalf("% x: raftpb took it", b)
		}
		if err := decodeEntry(b, &got); err == nil {
			t.Errorf("% x: decoded without error", b)
		}
	}
}
