package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// The two stream encodings of upstream's peer protocol.
//
// message: every raft message as an 8-byte big-endian length and the marshalled raftpb.Message.
// It is also the head of a snapshot POST.
//
// msgappv2 (MsgApp traffic from leader to follower): a one-byte type, then
//
//	0 link heartbeat                       (nothing else)
//	1 entries continuing the last MsgApp   count, then per entry its size and bytes, then commit
//	                                       (8-byte big-endian integers)
//	2 any other message                    size and the marshalled raftpb.Message
//
// The compact form 1 is used when the message continues exactly where the previous one on the
// same connection ended, in the same term.

const (
	msgAppV2Heartbeat byte = 0
	msgAppV2Entries   byte = 1
	msgAppV2Message   byte = 2

	// maxMessageBytes bounds one message read from a peer, as upstream's 512 MB.
	maxMessageBytes = 512 << 20
	// maxSnapshotMessageBytes bounds the message at the head of a snapshot POST (upstream's 64 MB).
	maxSnapshotMessageBytes = 64 << 20
)

// errTooLarge is upstream's text for a message over the size limit.
var errTooLarge = errors.New("rafthttp: error limit exceeded")

// linkHeartbeat is what an idle stream carries so the reading side can tell a live peer from a
// dead one: a heartbeat with neither sender nor recipient, which raft never produces.
var linkHeartbeat = raftpb.Message{Type: raftpb.MsgHeartbeat}

func isLinkHeartbeat(m *raftpb.Message) bool {
	return m.Type == raftpb.MsgHeartbeat && m.From == 0 && m.To == 0
}

type encoder interface {
	encode(m *raftpb.Message) error
}

type decoder interface {
	decode() (raftpb.Message, error)
}

// bufferedWriter is what the encoders write into: a buffer (the stream's bufio.Writer) whose
// free space they marshal straight into.
type bufferedWriter interface {
	io.Writer
	AvailableBuffer() []byte
}

// pieces writes an encoded stream piece by piece (a header, one entry) into the buffer's free
// space, or into scratch when a piece does not fit there. A message is never assembled whole:
// the leader's MsgApps under a write load of big values run to megabytes, and building each in
// a buffer of its own was a quarter of what a leader allocated.
type pieces struct {
	w       bufferedWriter
	scratch []byte
}

// room returns an empty slice with capacity for n bytes, to be appended to and written.
func (p *pieces) room(n int) []byte {
	if b := p.w.AvailableBuffer(); cap(b) >= n {
		return b
	}
	if cap(p.scratch) < n {
		p.scratch = make([]byte, 0, n)
	}
	return p.scratch[:0]
}

// write writes b, got from room; scratch that a rare big piece (a snapshot's head, a catch-up
// of big entries) grew goes back to the collector.
func (p *pieces) write(b []byte) error {
	_, err := p.w.Write(b)
	if cap(p.scratch) > maxScratch {
		p.scratch = nil
	}
	return err
}

// maxScratch is the most scratch an encoder keeps between pieces.
const maxScratch = 1 << 20

// marshaler is a raft message or entry, as gogoproto generates them.
type marshaler interface {
	Size() int
	MarshalTo([]byte) (int, error)
}

// sized writes prefix, the 8-byte big-endian size of v and v marshalled, as one piece.
func (p *pieces) sized(prefix []byte, v marshaler, what string) error {
	n := v.Size()
	b := append(p.room(len(prefix)+8+n), prefix...)
	b = binary.BigEndian.AppendUint64(b, uint64(n))
	at := len(b)
	b = b[:at+n]
	if _, err := v.MarshalTo(b[at:]); err != nil {
		return fmt.Errorf("marshal %s: %w", what, err)
	}
	return p.write(b)
}

type messageEncoder struct{ pieces }

func (e *messageEncoder) encode(m *raftpb.Message) error {
	return e.sized(nil, m, "raft message")
}

type messageDecoder struct {
	r     io.Reader
	limit uint64
}

func (d *messageDecoder) decode() (raftpb.Message, error) {
	var m raftpb.Message
	var hdr [8]byte
	if _, err := io.ReadFull(d.r, hdr[:]); err != nil {
		return m, err
	}
	n := binary.BigEndian.Uint64(hdr[:])
	limit := d.limit
	if limit == 0 {
		limit = maxMessageBytes
	}
	if n > limit {
		return m, errTooLarge
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(d.r, b); err != nil {
		return m, unexpectedEOF(err)
	}
	return m, m.Unmarshal(b)
}

// msgAppV2Encoder writes the msgappv2 stream of one connection.
type msgAppV2Encoder struct {
	pieces
	term, index uint64 // where the last MsgApp on this connection ended
}

func (e *msgAppV2Encoder) encode(m *raftpb.Message) error {
	switch {
	case isLinkHeartbeat(m):
		return e.write(append(e.room(1), msgAppV2Heartbeat))
	case e.index == m.Index && e.term == m.LogTerm && m.LogTerm == m.Term:
		head := binary.BigEndian.AppendUint64(append(e.room(9), msgAppV2Entries), uint64(len(m.Entries)))
		if err := e.write(head); err != nil {
			return err
		}
		for i := range m.Entries {
			if err := e.sized(nil, &m.Entries[i], "raft entry"); err != nil {
				return err
			}
			e.index++
		}
		return e.write(binary.BigEndian.AppendUint64(e.room(8), m.Commit))
	default:
		e.term, e.index = m.Term, m.Index
		if n := len(m.Entries); n > 0 {
			e.index = m.Entries[n-1].Index
		}
		return e.sized([]byte{msgAppV2Message}, m, "raft message")
	}
}

// msgAppV2Decoder reads the msgappv2 stream of one connection from remote to local.
type msgAppV2Decoder struct {
	r             io.Reader
	local, remote uint64
	term, index   uint64
}

func (d *msgAppV2Decoder) decode() (raftpb.Message, error) {
	var m raftpb.Message
	var typ [1]byte
	if _, err := io.ReadFull(d.r, typ[:]); err != nil {
		return m, err
	}
	switch typ[0] {
	case msgAppV2Heartbeat:
		return linkHeartbeat, nil
	case msgAppV2Entries:
		m = raftpb.Message{Type: raftpb.MsgApp, From: d.remote, To: d.local, Term: d.term, LogTerm: d.term, Index: d.index}
		n, err := d.uint64()
		if err != nil {
			return m, err
		}
		if n > maxMessageBytes/8 {
			return m, errTooLarge
		}
		m.Entries = make([]raftpb.Entry, n)
		for i := range m.Entries {
			b, err := d.sized()
			if err != nil {
				return m, err
			}
			if err := decodeEntry(b, &m.Entries[i]); err != nil {
				return m, fmt.Errorf("msgappv2 entry: %w", err)
			}
			d.index++
		}
		if m.Commit, err = d.uint64(); err != nil {
			return m, err
		}
	case msgAppV2Message:
		b, err := d.sized()
		if err != nil {
			return m, err
		}
		if err := m.Unmarshal(b); err != nil {
			return m, fmt.Errorf("msgappv2 message: %w", err)
		}
		d.term, d.index = m.Term, m.Index
		if n := len(m.Entries); n > 0 {
			d.index = m.Entries[n-1].Index
		}
	default:
		return m, fmt.Errorf("failed to parse type %d in msgappv2 stream", typ[0])
	}
	return m, nil
}

// sized reads a length-prefixed piece (an entry, a message).
func (d *msgAppV2Decoder) sized() ([]byte, error) {
	size, err := d.uint64()
	if err != nil {
		return nil, err
	}
	if size > maxMessageBytes {
		return nil, errTooLarge
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(d.r, b); err != nil {
		return nil, unexpectedEOF(err)
	}
	return b, nil
}

// decodeEntry decodes one marshalled raft entry (raftpb.Entry's fields: 1 type, 2 term, 3 index,
// 4 data; others skipped) into e, whose Data is then a slice of b, not a copy: each entry of the
// stream is read into a buffer of its own, which the entry may keep. raftpb's Unmarshal copies
// the data, so every replicated entry cost a follower two buffers of its size.
func decodeEntry(b []byte, e *raftpb.Entry) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("entry field tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		switch num {
		case 1, 2, 3:
			if typ != protowire.VarintType {
				return fmt.Errorf("entry field %d: wire type %d, want a varint", num, typ)
			}
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return fmt.Errorf("entry field %d: %w", num, protowire.ParseError(n))
			}
			switch num {
			case 1:
				e.Type = raftpb.EntryType(int32(v))
			case 2:
				e.Term = v
			case 3:
				e.Index = v
			}
			b = b[n:]
		case 4:
			if typ != protowire.BytesType {
				return fmt.Errorf("entry data: wire type %d, want bytes", typ)
			}
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("entry data: %w", protowire.ParseError(n))
			}
			e.Data = v[:len(v):len(v)]
			b = b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("entry field %d: %w", num, protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	return nil
}

func (d *msgAppV2Decoder) uint64() (uint64, error) {
	var b [8]byte
	if _, err := io.ReadFull(d.r, b[:]); err != nil {
		return 0, unexpectedEOF(err)
	}
	return binary.BigEndian.Uint64(b[:]), nil
}

// unexpectedEOF turns an EOF in the middle of a message into io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
