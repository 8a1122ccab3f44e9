package schema

import (
	"encoding/binary"
	"fmt"
	"strconv"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// PutUint64 encodes a meta value (consistent index, term) big-endian, as upstream.
func PutUint64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

// GetUint64 reads a big-endian uint64; missing or short values read as zero.
func GetUint64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// Revision is a main revision (one per write transaction) and a sub revision (one per change
// inside it): the key of a value in the key bucket.
type Revision struct {
	Main int64
	Sub  int64
}

// GreaterThan orders revisions.
func (a Revision) GreaterThan(b Revision) bool {
	if a.Main != b.Main {
		return a.Main > b.Main
	}
	return a.Sub > b.Sub
}

// RevisionKeyLen is the length of a revision's key (without the tombstone mark), for callers
// that build keys in a buffer of their own (AppendRevisionKey).
const RevisionKeyLen = revKeyLen

const (
	revKeyLen       = 17 // 8 main + '_' + 8 sub
	markedRevKeyLen = revKeyLen + 1
	markTombstone   = 't'
)

// RevisionKey encodes a revision as its key-bucket key; a deletion is marked with a trailing 't'.
func RevisionKey(r Revision, tombstone bool) []byte {
	n := revKeyLen
	if tombstone {
		n = markedRevKeyLen
	}
	return AppendRevisionKey(make([]byte, 0, n), r, tombstone)
}

// AppendRevisionKey appends RevisionKey(r, tombstone) to dst (a reader looking up many keys
// reuses one buffer).
func AppendRevisionKey(dst []byte, r Revision, tombstone bool) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.Main))
	dst = append(dst, '_')
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.Sub))
	if tombstone {
		dst = append(dst, markTombstone)
	}
	return dst
}

// ParseRevisionKey decodes a key-bucket key; it reports whether the key marks a tombstone.
func ParseRevisionKey(b []byte) (Revision, bool, error) {
	if len(b) != revKeyLen && len(b) != markedRevKeyLen {
		return Revision{}, false, fmt.Errorf("mvcc: malformed revision key %x", b)
	}
	r := Revision{Main: int64(binary.BigEndian.Uint64(b[0:8])), Sub: int64(binary.BigEndian.Uint64(b[9:17]))}
	return r, len(b) == markedRevKeyLen && b[17] == markTombstone, nil
}

// MemberKey is a members or members_removed key: the ID in hex, as upstream.
func MemberKey(id uint64) []byte { return []byte(strconv.FormatUint(id, 16)) }

// ParseMemberKey reads a member ID back from its key.
func ParseMemberKey(k []byte) (uint64, error) {
	id, err := strconv.ParseUint(string(k), 16, 64)
	if err != nil {
		return 0, fmt.Errorf("malformed member key %q: %w", k, err)
	}
	return id, nil
}

// MemberRemovedValue is what upstream stores for a removed member.
var MemberRemovedValue = []byte("removed")

// LeaseKey is a lease bucket key: the ID big-endian.
func LeaseKey(id int64) []byte { return PutUint64(uint64(id)) }

// LeaseRecord is a lease bucket value: upstream's leasepb.Lease.
type LeaseRecord struct {
	ID, TTL, RemainingTTL int64
}

// Encode writes upstream's leasepb.Lease: ID (field 1), TTL (2), RemainingTTL (3), zero fields
// left out as protobuf does.
func (l LeaseRecord) Encode() []byte {
	var b []byte
	for _, f := range []struct {
		num protowire.Number
		v   int64
	}{{1, l.ID}, {2, l.TTL}, {3, l.RemainingTTL}} {
		if f.v != 0 {
			b = protowire.AppendTag(b, f.num, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(f.v))
		}
	}
	return b
}

// DecodeLease reads a lease bucket value, skipping fields it does not know.
func DecodeLease(b []byte) (LeaseRecord, error) {
	var l LeaseRecord
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return LeaseRecord{}, protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.VarintType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return LeaseRecord{}, protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return LeaseRecord{}, protowire.ParseError(n)
		}
		b = b[n:]
		switch num {
		case 1:
			l.ID = int64(v)
		case 2:
			l.TTL = int64(v)
		case 3:
			l.RemainingTTL = int64(v)
		}
	}
	return l, nil
}

// AlarmKey is an alarm bucket key: the encoded AlarmMember (the value is empty).
func AlarmKey(m *pb.AlarmMember) ([]byte, error) {
	k, err := m.Marshal()
	if err != nil {
		return nil, fmt.Errorf("encode alarm: %w", err)
	}
	return k, nil
}

// ParseAlarmKey reads an alarm back from its key.
func ParseAlarmKey(k []byte) (*pb.AlarmMember, error) {
	var m pb.AlarmMember
	if err := m.Unmarshal(k); err != nil {
		return nil, fmt.Errorf("alarm record: %w", err)
	}
	return &m, nil
}

// WALMetadata is what a member writes at the start of every WAL segment: who it is and in which
// cluster, as upstream's etcdserverpb.Metadata.
type WALMetadata struct {
	NodeID    uint64
	ClusterID uint64
}

// Encode is the metadata record's payload.
func (m WALMetadata) Encode() []byte {
	b, _ := (&pb.Metadata{NodeID: m.NodeID, ClusterID: m.ClusterID}).Marshal() // two integers always encode
	return b
}

// DecodeWALMetadata reads the metadata record's payload.
func DecodeWALMetadata(b []byte) (WALMetadata, error) {
	var md pb.Metadata
	if err := md.Unmarshal(b); err != nil {
		return WALMetadata{}, fmt.Errorf("decode WAL metadata: %w", err)
	}
	return WALMetadata{NodeID: md.NodeID, ClusterID: md.ClusterID}, nil
}
