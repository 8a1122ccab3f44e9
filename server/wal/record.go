package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// The on-disk format is upstream etcd's, so a data dir moves between the two implementations.
//
// A segment is a sequence of frames: an 8-byte little-endian length field, then a walpb.Record
// (type, crc, data) padded with zeros to a multiple of 8 bytes. When there is padding, the top
// byte of the length field is 0x80 | pad and the low 56 bits are the record's length. A zero
// length field ends the segment (segments are preallocated with zeros).
//
// Every record's crc is the CRC-32C of all record data so far, chained across segments: each
// segment begins with a crc record carrying the running value at its start.
const (
	recMetadata int64 = iota + 1 // etcdserverpb.Metadata (node and cluster ID)
	recEntry                     // raftpb.Entry
	recState                     // raftpb.HardState
	recCRC                       // the running crc at the start of a segment
	recSnapshot                  // walpb.Snapshot (index, term, conf state)
)

const (
	frameSize = 8
	// sectorSize is the unit a torn write is judged by: a sector of a record that is all zeros
	// was never written.
	sectorSize = 512
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// errTorn marks a record that an interrupted final write explains: safe to cut off when it is
// in the last segment, corruption anywhere else.
var errTorn = errors.New("torn write")

// errCRC is upstream's text for a record whose checksum does not match.
var errCRC = errors.New("walpb: crc mismatch")

type record struct {
	typ  int64
	crc  uint32
	data []byte
}

// appendFrame appends rec as one padded frame. Type and crc are always written and data only
// when present, as upstream's generated encoder does.
func appendFrame(buf []byte, rec record) []byte {
	n := protowire.SizeTag(1) + protowire.SizeVarint(uint64(rec.typ)) + protowire.SizeTag(2) + protowire.SizeVarint(uint64(rec.crc))
	if rec.data != nil {
		n += protowire.SizeTag(3) + protowire.SizeBytes(len(rec.data))
	}
	pad := (8 - n%8) % 8
	lenField := uint64(n)
	if pad != 0 {
		lenField |= uint64(0x80|pad) << 56
	}
	buf = binary.LittleEndian.AppendUint64(buf, lenField)
	buf = protowire.AppendTag(buf, 1, protowire.VarintType)
	buf = protowire.AppendVarint(buf, uint64(rec.typ))
	buf = protowire.AppendTag(buf, 2, protowire.VarintType)
	buf = protowire.AppendVarint(buf, uint64(rec.crc))
	if rec.data != nil {
		buf = protowire.AppendTag(buf, 3, protowire.BytesType)
		buf = protowire.AppendBytes(buf, rec.data)
	}
	return append(buf, make([]byte, pad)...)
}

// frameLength splits a length field into the record's size and its padding.
func frameLength(field uint64) (recBytes, padBytes int64) {
	recBytes = int64(field &^ (uint64(0xff) << 56))
	if field>>63 == 1 {
		padBytes = int64((field >> 56) & 0x7)
	}
	return recBytes, padBytes
}

// eachField calls fn for every field of an encoded message: v holds a varint field's value,
// data a length-delimited field's bytes; fields of other wire types are skipped.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, v uint64, data []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v uint64
		var data []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			data, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if typ == protowire.VarintType || typ == protowire.BytesType {
			if err := fn(num, typ, v, data); err != nil {
				return err
			}
		}
	}
	return nil
}

func unmarshalRecord(b []byte) (record, error) {
	var r record
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v uint64, data []byte) error {
		switch {
		case num == 1 && typ == protowire.VarintType:
			r.typ = int64(v)
		case num == 2 && typ == protowire.VarintType:
			r.crc = uint32(v)
		case num == 3 && typ == protowire.BytesType:
			r.data = append([]byte{}, data...)
		}
		return nil
	})
	return r, err
}

// marshalSnapshot encodes a snapshot marker as upstream's walpb.Snapshot (index 1, term 2,
// conf state 3; the conf state only for a real snapshot).
func marshalSnapshot(m raftpb.SnapshotMetadata) ([]byte, error) {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, m.Index)
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, m.Term)
	if m.Index > 0 {
		cs, err := m.ConfState.Marshal()
		if err != nil {
			return nil, fmt.Errorf("wal: marshal conf state: %w", err)
		}
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, cs)
	}
	return b, nil
}

func unmarshalSnapshot(b []byte) (raftpb.SnapshotMetadata, error) {
	var m raftpb.SnapshotMetadata
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v uint64, data []byte) error {
		switch {
		case num == 1 && typ == protowire.VarintType:
			m.Index = v
		case num == 2 && typ == protowire.VarintType:
			m.Term = v
		case num == 3 && typ == protowire.BytesType:
			return m.ConfState.Unmarshal(data)
		}
		return nil
	})
	return m, err
}

// lengthAgrees reports whether the start of a record's bytes, at file offset off, is consistent
// with recBytes from its length field. The length field and the bytes after it in the same
// sector reach the disk together, so they must agree; bytes that begin a new, unwritten
// sector tell nothing and are taken as agreeing.
func lengthAgrees(data []byte, off int64, recBytes int64) bool {
	head := data[:min(int64(len(data)), sectorSize-off%sectorSize)]
	if off%sectorSize == 0 && allZero(head) {
		return true
	}
	// Past the end of head the prefix may sit in a sector that was never written: running out
	// of bytes there is no evidence either way.
	unknown := len(head) < len(data)
	b, used := head, 0
	field := func(num protowire.Number, typ protowire.Type) (v uint64, ok, short bool) {
		if len(b) == 0 {
			return 0, false, true
		}
		n, t, tn := protowire.ConsumeTag(b)
		if tn < 0 {
			return 0, false, len(b) < binary.MaxVarintLen64
		}
		if n != num || t != typ {
			return 0, false, false
		}
		v, vn := protowire.ConsumeVarint(b[tn:])
		if vn < 0 {
			return 0, false, len(b[tn:]) < binary.MaxVarintLen64
		}
		b, used = b[tn+vn:], used+tn+vn
		return v, true, false
	}
	for _, num := range []protowire.Number{1, 2} { // type, crc
		if _, ok, short := field(num, protowire.VarintType); !ok {
			return short && unknown
		}
	}
	if int64(used) == recBytes {
		return true // a record without data
	}
	size, ok, short := field(3, protowire.BytesType)
	if !ok {
		return short && unknown
	}
	return int64(used)+int64(size) == recBytes
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// hasZeroSector reports whether data, which starts at file offset off, has a sector-aligned
// piece that is all zeros: upstream's sign of a write the disk never completed.
func hasZeroSector(data []byte, off int64) bool {
	for len(data) > 0 {
		n := int(sectorSize - off%sectorSize)
		if n > len(data) {
			n = len(data)
		}
		zero := true
		for _, c := range data[:n] {
			if c != 0 {
				zero = false
				break
			}
		}
		if zero {
			return true
		}
		data, off = data[n:], off+int64(n)
	}
	return false
}

// isEarlierFormat recognises the first bytes of a segment written by etcdx before it adopted
// upstream's format (a 4-byte length, a CRC-32C of type and payload, then a metadata type byte).
func isEarlierFormat(b []byte) bool {
	if len(b) < 9 {
		return false
	}
	n := int(binary.LittleEndian.Uint32(b[0:4]))
	if n < 1 || 8+n > len(b) || b[8] != 1 {
		return false
	}
	return crc32.Checksum(b[8:8+n], crcTable) == binary.LittleEndian.Uint32(b[4:8])
}

func crc32Update(c uint32, b []byte) uint32 { return crc32.Update(c, crcTable, b) }
