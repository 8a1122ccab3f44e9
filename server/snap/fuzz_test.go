package snap

import (
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// fileOf is a snap file around data with its correct CRC, so the fuzzer reaches the decoding
// behind the check.
func fileOf(data []byte) []byte {
	b := protowire.AppendTag(nil, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(crc32.Checksum(data, crcTable)))
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	return protowire.AppendBytes(b, data)
}

// FuzzLoad: any bytes as a .snap file, taken as they are and wrapped with a valid CRC, give a
// snapshot or an error, never a panic.
func FuzzLoad(f *testing.F) {
	sn := raftpb.Snapshot{Data: []byte(`{"Root":{}}`), Metadata: raftpb.SnapshotMetadata{Index: 7, Term: 2, ConfState: raftpb.ConfState{Voters: []uint64{1, 2, 3}}}}
	data, err := sn.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(fileOf(data))
	f.Add([]byte{})
	dir := f.TempDir() // one per fuzzing process, whose runs are sequential
	path := filepath.Join(dir, "0000000000000002-0000000000000007.snap")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, b := range [][]byte{data, fileOf(data)} {
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			Load(path)
		}
	})
}
