package e2e

import (
	"bytes"
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestClientPortFlowControlWindows: ours announces fixed flow-control windows on the client port
// (a stream's holds the largest request, the connection's 16 MiB) and sends no bandwidth-estimate
// pings while answering a put; upstream 3.7.3, beside it, starts at HTTP/2's 64 KiB and pings as
// soon as the request's data arrives (docs/compatibility.md). Both answer the put.
func TestClientPortFlowControlWindows(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	up := NewMember(t)
	up.Bin = UpstreamBinary(t, "etcd")
	up.Start()
	ours := NewMember(t)
	ours.Start()

	window, connWindow, pinged := rawPut(t, ours.ClientURL)
	if window != 2<<20 || connWindow != 16<<20 || pinged {
		t.Errorf("ours: stream window %d, connection window %d, pinged %v; want %d, %d, no ping", window, connWindow, pinged, 2<<20, 16<<20)
	}
	window, connWindow, pinged = rawPut(t, up.ClientURL)
	if window != 65535 || !pinged {
		t.Errorf("upstream: stream window %d, pinged %v; want HTTP/2's 65535 and a ping (if upstream changed, update docs/compatibility.md)", window, pinged)
	}
	t.Logf("upstream: stream window %d, connection window %d, pinged %v", window, connWindow, pinged)
}

// rawPut speaks HTTP/2 to a member's client URL, puts one key through KV.Put and returns the
// stream window the member announced, its connection window and whether it sent a ping of its own
// (not an ack) before the answer ended.
func rawPut(t *testing.T, clientURL string) (window, connWindow uint32, pinged bool) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(clientURL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var hdrs bytes.Buffer
	enc := hpack.NewEncoder(&hdrs)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/etcdserverpb.KV/Put"},
		{":authority", "localhost"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	req, err := (&pb.PutRequest{Key: []byte("wire"), Value: []byte("v")}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	msg := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(req))) // gRPC's message prefix
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hdrs.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteData(1, true, append(msg, req...)); err != nil {
		t.Fatal(err)
	}
	connWindow = 65535
	status := ""
	for status == "" {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("%s: reading frames: %v", clientURL, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			window = 65535
			if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
				window = v
			}
			if err := fr.WriteSettingsAck(); err != nil {
				t.Fatal(err)
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				connWindow += f.Increment
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				pinged = true
				if err := fr.WritePing(true, f.Data); err != nil {
					t.Fatal(err)
				}
			}
		case *http2.MetaHeadersFrame:
			if f.StreamEnded() {
				status = "none"
				for _, hf := range f.Fields {
					if hf.Name == "grpc-status" {
						status = hf.Value
					}
				}
			}
		case *http2.GoAwayFrame:
			t.Fatalf("%s: GOAWAY %v", clientURL, f.ErrCode)
		}
	}
	if status != "0" {
		t.Fatalf("%s: put answered grpc-status %q", clientURL, status)
	}
	return window, connWindow, pinged
}
