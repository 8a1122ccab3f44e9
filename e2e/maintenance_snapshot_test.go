package e2e

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// TestSnapshotStreamAsUpstream: Maintenance.Snapshot streams as upstream 3.7.3's does: no header,
// the storage version in every message (what etcdctl prints as "Server version"), RemainingBytes
// counting the database still to come, and the SHA-256 last with RemainingBytes 0.
func TestSnapshotStreamAsUpstream(t *testing.T) {
	besideUpstream(t, func(t *testing.T, m *Member) []string {
		writeN(t, m.Client(), "snap", 200)
		stream, err := pb.NewMaintenanceClient(rawConn(t, m)).Snapshot(Ctx(t), &pb.SnapshotRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var msgs []*pb.SnapshotResponse
		for {
			r, err := stream.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, r)
		}
		if len(msgs) < 2 {
			t.Fatalf("%d messages", len(msgs))
		}
		var total uint64
		for _, r := range msgs[:len(msgs)-1] {
			total += uint64(len(r.Blob))
		}
		var answers []string
		sent := uint64(0)
		for i, r := range msgs {
			last := i == len(msgs)-1
			if !last {
				sent += uint64(len(r.Blob))
			}
			remainingOK := (!last && r.RemainingBytes == total-sent) || (last && r.RemainingBytes == 0 && len(r.Blob) == 32)
			answers = append(answers, fmt.Sprintf("last=%v version=%q header=%v remaining-counts-the-db=%v", last, r.Version, r.Header != nil, remainingOK))
		}
		// The number of chunks follows the file's size, which differs: keep the first and the last.
		answers = []string{answers[0], answers[len(answers)-1]}
		// The member logs the transfer with upstream's events and fields (values differ).
		for _, msg := range []string{"sending database snapshot to client", "sending database sha256 checksum to client",
			"successfully sent database snapshot to client"} {
			found := "not logged"
			for _, l := range logLines(t, []byte(m.Log())) {
				if l["msg"] == msg {
					var keys []string
					for k := range l {
						if k != "ts" && k != "caller" {
							keys = append(keys, k)
						}
					}
					sort.Strings(keys)
					found = strings.Join(keys, ",")
				}
			}
			answers = append(answers, msg+": "+found)
		}
		answers = append(answers, fmt.Sprintf("snapshot duration observed: %v",
			metricValue(t, m, "etcd_disk_backend_snapshot_duration_seconds_count") >= 1))
		return answers
	})
}
