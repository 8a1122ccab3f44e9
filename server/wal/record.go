package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Record framing: an 8-byte header (little-endian payload length, CRC-32C of type+payload), then
// one type byte and the payload. The CRC covers the type so a flipped type byte is caught too.
const headerSize = 8

type recordType byte

const (
	recMetadata  recordType = 1 // opaque bytes written at the start of every segment
	recEntry     recordType = 2 // raftpb.Entry
	recState     recordType = 3 // raftpb.HardState
	recSnapshot  recordType = 4 // raftpb.SnapshotMetadata (index, term, conf state)
	maxRecordLen            = 512 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// errTorn marks a record that could not be read completely or failed its checksum. Whether that
// is a torn tail (safe to cut off) or corruption depends on where it is; the reader decides.
var errTorn = errors.New("torn or corrupt record")

func encodeRecord(buf []byte, t recordType, payload []byte) []byte {
	var hdr [headerSize]byte
	n := len(payload) + 1
	binary.LittleEndian.PutUint32(hdr[0:4], uint32(n))
	c := crc32.Update(0, crcTable, []byte{byte(t)})
	c = crc32.Update(c, crcTable, payload)
	binary.LittleEndian.PutUint32(hdr[4:8], c)
	buf = append(buf, hdr[:]...)
	buf = append(buf, byte(t))
	return append(buf, payload...)
}

// decodeRecord reads the record at the start of b. It returns the number of bytes consumed,
// or errTorn (wrapped with the reason) when the record is incomplete or fails its checksum.
func decodeRecord(b []byte) (recordType, []byte, int, error) {
	if len(b) < headerSize {
		return 0, nil, 0, fmt.Errorf("%w: short header (%d bytes)", errTorn, len(b))
	}
	length := binary.LittleEndian.Uint32(b[0:4])
	want := binary.LittleEndian.Uint32(b[4:8])
	if length == 0 || length > maxRecordLen {
		return 0, nil, 0, fmt.Errorf("%w: invalid length %d", errTorn, length)
	}
	end := headerSize + int(length)
	if len(b) < end {
		return 0, nil, 0, fmt.Errorf("%w: short record (want %d bytes, have %d)", errTorn, length, len(b)-headerSize)
	}
	body := b[headerSize:end]
	if got := crc32.Checksum(body, crcTable); got != want {
		return 0, nil, 0, fmt.Errorf("%w: crc mismatch (stored %08x, computed %08x)", errTorn, want, got)
	}
	return recordType(body[0]), body[1:], end, nil
}

// isTail reports whether a bad record at b[0:] can only be an interrupted final write. A torn
// write leaves less than one record of junk and nothing valid after it; if any checksum-valid
// record follows (or more bytes than one record can hold), the damage is corruption instead.
func isTail(b []byte) bool {
	if len(b) > headerSize+maxRecordLen {
		return false
	}
	for k := 1; k+headerSize < len(b); k++ {
		length := binary.LittleEndian.Uint32(b[k : k+4])
		if length == 0 || int(length) > len(b)-k-headerSize {
			continue
		}
		if t := recordType(b[k+headerSize]); t < recMetadata || t > recSnapshot {
			continue
		}
		if _, _, _, err := decodeRecord(b[k:]); err == nil {
			return false
		}
	}
	return true
}
