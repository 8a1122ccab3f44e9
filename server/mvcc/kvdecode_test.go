package mvcc

import (
	"bytes"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// decodeKV must agree with the generated Unmarshal on every input: the same fields from a valid
// record, and an error wherever Unmarshal gives one.
func TestDecodeKVAgreesWithUnmarshal(t *testing.T) {
	enc := func(kv mvccpb.KeyValue) []byte {
		b, err := kv.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	full := enc(mvccpb.KeyValue{Key: []byte("key"), CreateRevision: 5, ModRevision: 1 << 40, Version: 3, Value: bytes.Repeat([]byte("v"), 300), Lease: -1})
	withUnknown := protowire.AppendTag(append([]byte(nil), full...), 9, protowire.BytesType)
	withUnknown = protowire.AppendBytes(withUnknown, []byte("from a newer version"))
	withUnknown = protowire.AppendTag(withUnknown, 10, protowire.Fixed64Type)
	withUnknown = protowire.AppendFixed64(withUnknown, 7)
	cases := map[string][]byte{
		"full":            full,
		"empty record":    {},
		"key only":        enc(mvccpb.KeyValue{Key: []byte("k")}),
		"empty value":     enc(mvccpb.KeyValue{Key: []byte("k"), ModRevision: 2}),
		"unknown fields":  withUnknown,
		"key as varint":   protowire.AppendVarint(protowire.AppendTag(nil, kvKey, protowire.VarintType), 1),
		"version as blob": protowire.AppendBytes(protowire.AppendTag(nil, kvVersion, protowire.BytesType), []byte("x")),
		"bad length":      {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f},
	}
	// Every truncation of a full record, too.
	for n := 1; n < len(withUnknown); n++ {
		cases["truncated "+string(rune('A'+n%26))+string(rune('a'+n/26))] = withUnknown[:n]
	}
	for name, b := range cases {
		var want, got mvccpb.KeyValue
		wantErr := want.Unmarshal(b)
		gotErr := decodeKV(b, &got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Errorf("%s: decodeKV error %v, Unmarshal error %v", name, gotErr, wantErr)
			continue
		}
		if wantErr != nil {
			continue
		}
		if !bytes.Equal(got.Key, want.Key) || !bytes.Equal(got.Value, want.Value) || got.CreateRevision != want.CreateRevision ||
			got.ModRevision != want.ModRevision || got.Version != want.Version || got.Lease != want.Lease {
			t.Errorf("%s: decodeKV gave %+v, Unmarshal %+v", name, got, want)
		}
	}
}

// The decoded records share one buffer but do not overlap, and none points into the input.
func TestDecodeKVsCopiesOnce(t *testing.T) {
	var vals [][]byte
	for i := 0; i < 3; i++ {
		kv := mvccpb.KeyValue{Key: []byte{'k', byte('0' + i)}, Value: []byte{'v', byte('0' + i)}, ModRevision: int64(i + 2)}
		b, _ := kv.Marshal()
		vals = append(vals, b)
	}
	kvs := make([]mvccpb.KeyValue, len(vals))
	if i, err := decodeKVs(vals, kvs); err != nil {
		t.Fatalf("record %d: %v", i, err)
	}
	for _, v := range vals {
		for j := range v {
			v[j] = 0 // the source goes away when its transaction ends
		}
	}
	kvs[0].Key = append(kvs[0].Key, 'x')
	kvs[0].Value = append(kvs[0].Value, 'x')
	for i, kv := range kvs {
		if i > 0 && (string(kv.Key) != string([]byte{'k', byte('0' + i)}) || string(kv.Value) != string([]byte{'v', byte('0' + i)})) || kv.ModRevision != int64(i+2) {
			t.Fatalf("record %d decoded as %+v", i, kv)
		}
	}
	good, _ := (&mvccpb.KeyValue{Key: []byte("k")}).Marshal()
	bad := [][]byte{good, {0x0a, 0x05}}
	if i, err := decodeKVs(bad, make([]mvccpb.KeyValue, 2)); err == nil || i != 1 {
		t.Fatalf("damaged second record: index %d, error %v", i, err)
	}
}
