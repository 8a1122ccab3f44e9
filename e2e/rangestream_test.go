package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/status"

	"etcdx/pkg/rangestream"
)

// streamChunks runs one RangeStream call and returns its chunks, or the error's status text.
func streamChunks(t *testing.T, cl *clientv3.Client, r *pb.RangeRequest) ([]*pb.RangeResponse, string) {
	t.Helper()
	s, err := rangestream.Open(Ctx(t), cl.ActiveConnection(), r)
	if err != nil {
		return nil, status.Convert(err).String()
	}
	var chunks []*pb.RangeResponse
	for {
		c, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return chunks, ""
		}
		if err != nil {
			return chunks, status.Convert(err).String()
		}
		chunks = append(chunks, c)
	}
}

// chunkShape describes chunks without the member's identity: the keys each holds (first..last),
// and what the last carries.
func chunkShape(chunks []*pb.RangeResponse) string {
	var b strings.Builder
	for i, c := range chunks {
		fmt.Fprintf(&b, "[%d keys", len(c.Kvs))
		if len(c.Kvs) > 0 {
			fmt.Fprintf(&b, " %s..%s", c.Kvs[0].Key, c.Kvs[len(c.Kvs)-1].Key)
		}
		for _, kv := range c.Kvs {
			fmt.Fprintf(&b, " %d/%d/%d/%d", kv.CreateRevision, kv.ModRevision, kv.Version, len(kv.Value))
		}
		if c.Header != nil {
			fmt.Fprintf(&b, " header rev %d", c.Header.Revision)
		}
		fmt.Fprintf(&b, " more %v count %d] ", c.More, c.Count)
		if i == len(chunks)-1 && c.Header == nil {
			b.WriteString("(last chunk without a header) ")
		}
	}
	return b.String()
}

// loadStreamData writes the same history to a member: keys of growing values (so chunk sizes
// adapt), overwrites, deletions and a compaction.
func loadStreamData(t *testing.T, cl *clientv3.Client) {
	t.Helper()
	ctx := Ctx(t)
	for i := 0; i < 400; i++ {
		if _, err := cl.Put(ctx, fmt.Sprintf("k/%04d", i), strings.Repeat("v", 1+i*60)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 400; i += 7 {
		if _, err := cl.Put(ctx, fmt.Sprintf("k/%04d", i), "again"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.Delete(ctx, "k/0100", clientv3.WithRange("k/0120")); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Put(ctx, "z", "last"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Compact(ctx, 50); err != nil {
		t.Fatal(err)
	}
}

// TestRangeStreamAsUpstream runs the same RangeStream requests on ours (level 3.7) and on upstream
// 3.7.3 holding the same history: the same chunks (keys, sizes, where the header, More and Count
// are), the same refusals, and merged chunks equal to Range's answer. Upstream's etcdctl 3.7.3
// `get --stream` prints the same through either, and ours prints what upstream's does. A member at level 3.6 answers as upstream 3.6.16,
// which has no such method.
func TestRangeStreamAsUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	// small chunks: many of them, and resizing
	up := NewMember(t, "--max-request-bytes", "65536")
	up.Bin = UpstreamBinaryAt(t, Upstream37Version, "etcd")
	ours := NewMember(t, "--max-request-bytes", "65536")
	up.Start()
	ours.Start()
	ucl, ocl := up.Client(), ours.Client()
	loadStreamData(t, ucl)
	loadStreamData(t, ocl)

	type req = pb.RangeRequest
	all := []byte{0}
	cases := []struct {
		name string
		r    *req
	}{
		{"prefix", &req{Key: []byte("k/"), RangeEnd: []byte("k0")}},
		{"everything", &req{Key: all, RangeEnd: all}},
		{"limit inside a chunk", &req{Key: []byte("k/"), RangeEnd: []byte("k0"), Limit: 7}},
		{"limit across chunks", &req{Key: []byte("k/"), RangeEnd: []byte("k0"), Limit: 150}},
		{"limit equal to the keys", &req{Key: []byte("k/"), RangeEnd: []byte("k0"), Limit: 380}},
		{"keys only", &req{Key: all, RangeEnd: all, KeysOnly: true}},
		{"count only", &req{Key: all, RangeEnd: all, CountOnly: true}},
		{"serializable", &req{Key: []byte("k/03"), RangeEnd: []byte("k/04"), Serializable: true}},
		{"at a revision", &req{Key: []byte("k/"), RangeEnd: []byte("k0"), Revision: 300}},
		{"one key", &req{Key: []byte("k/0007")}},
		{"missing key", &req{Key: []byte("nope")}},
		{"empty range", &req{Key: []byte("k/0100"), RangeEnd: []byte("k/0120")}},
		{"from a key", &req{Key: []byte("k/0390"), RangeEnd: all}},
		{"sort by key ascending", &req{Key: []byte("k/"), RangeEnd: []byte("k0"), SortTarget: pb.RangeRequest_KEY, SortOrder: pb.RangeRequest_ASCEND}},
		{"sort descending", &req{Key: []byte("k/"), RangeEnd: []byte("k0"), SortOrder: pb.RangeRequest_DESCEND}},
		{"sort by value", &req{Key: []byte("k/"), RangeEnd: []byte("k0"), SortTarget: pb.RangeRequest_VALUE, SortOrder: pb.RangeRequest_ASCEND}},
		{"min mod revision", &req{Key: []byte("k/"), RangeEnd: []byte("k0"), MinModRevision: 10}},
		{"max create revision", &req{Key: []byte("k/"), RangeEnd: []byte("k0"), MaxCreateRevision: 10}},
		{"compacted revision", &req{Key: []byte("k/"), RangeEnd: []byte("k0"), Revision: 20}},
		{"future revision", &req{Key: []byte("k/"), RangeEnd: []byte("k0"), Revision: 100000}},
		{"no key", &req{}},
	}
	for _, c := range cases {
		uc, uerr := streamChunks(t, ucl, c.r)
		oc, oerr := streamChunks(t, ocl, c.r)
		if uerr != oerr {
			t.Errorf("%s: error %q, upstream %q", c.name, oerr, uerr)
			continue
		}
		if ushape, oshape := chunkShape(uc), chunkShape(oc); ushape != oshape {
			t.Errorf("%s: chunks\n ours     %s\n upstream %s", c.name, oshape, ushape)
			continue
		}
		if oerr != "" {
			continue
		}
		if len(oc) > 1 && oc[0].Header != nil {
			t.Errorf("%s: the first of %d chunks carries a header", c.name, len(oc))
		}
		// The merged chunks are Range's answer for the same request.
		s, err := rangestream.Open(Ctx(t), ocl.ActiveConnection(), c.r)
		if err != nil {
			t.Fatal(err)
		}
		merged, err := rangestream.Collect(s)
		if err != nil {
			t.Fatal(err)
		}
		rr, err := pb.NewKVClient(ocl.ActiveConnection()).Range(Ctx(t), c.r)
		if err != nil {
			t.Fatalf("%s: Range: %v", c.name, err)
		}
		if merged.Count != rr.Count || merged.More != rr.More || len(merged.Kvs) != len(rr.Kvs) || merged.Header.Revision != rr.Header.Revision ||
			merged.Header.MemberId != rr.Header.MemberId || merged.Header.ClusterId != rr.Header.ClusterId || merged.Header.RaftTerm != rr.Header.RaftTerm {
			t.Errorf("%s: merged stream count %d more %v keys %d header %v; Range count %d more %v keys %d header %v", c.name,
				merged.Count, merged.More, len(merged.Kvs), merged.Header, rr.Count, rr.More, len(rr.Kvs), rr.Header)
		}
		for i := range merged.Kvs {
			if i < len(rr.Kvs) && merged.Kvs[i].String() != rr.Kvs[i].String() {
				t.Errorf("%s: key %d: stream %s, Range %s", c.name, i, merged.Kvs[i].Key, rr.Kvs[i].Key)
				break
			}
		}
	}

	// A list read in pages of streams, as kube-apiserver 1.37 reads one (each page a stream with
	// a limit, at the first page's revision, from just after the last key): every page's chunks,
	// Count and More as upstream's, with writes going on between the pages (ours carries the count
	// from page to page instead of walking the range's rest for each page).
	pages := map[string]string{}
	for name, cl := range map[string]*clientv3.Client{"ours": ocl, "upstream": ucl} {
		var trail strings.Builder
		page := &req{Key: []byte("k/"), RangeEnd: []byte("k0"), Limit: 40}
		for i := 0; ; i++ {
			chunks, errText := streamChunks(t, cl, page)
			if errText != "" {
				t.Fatalf("%s: page %d: %s", name, i, errText)
			}
			fmt.Fprintf(&trail, "page %d: %s\n", i, chunkShape(chunks))
			last := chunks[len(chunks)-1]
			if !last.More {
				break
			}
			var lastKey []byte
			for _, c := range chunks {
				if len(c.Kvs) > 0 {
					lastKey = c.Kvs[len(c.Kvs)-1].Key
				}
			}
			if page.Revision == 0 {
				page.Revision = last.Header.Revision
			}
			page.Key = append(bytes.Clone(lastKey), 0)
			if _, err := cl.Put(Ctx(t), fmt.Sprintf("k/%04d", 50*i), "moved on"); err != nil {
				t.Fatal(err)
			}
			if _, err := cl.Delete(Ctx(t), fmt.Sprintf("k/%04d", 50*i+45)); err != nil {
				t.Fatal(err)
			}
		}
		pages[name] = trail.String()
	}
	if pages["ours"] != pages["upstream"] {
		t.Errorf("a list in pages of streams:\nours\n%s\nupstream\n%s", pages["ours"], pages["upstream"])
	}

	// Upstream's own client, through either member.
	uctl := UpstreamBinaryAt(t, Upstream37Version, "etcdctl")
	for _, args := range [][]string{
		{"get", "--stream", "--prefix", "k/03"},
		{"get", "--stream", "--prefix", "k/", "--limit", "25", "-w", "json"},
		{"get", "--stream", "--prefix", "k/", "--keys-only"},
		{"get", "--stream", "--prefix", "k/", "--order", "DESCEND"},
		{"get", "--stream", "--prefix", "k/", "--min-mod-rev", "5"},
		{"get", "--stream", "--prefix", "k/", "--count-only", "-w", "fields"},
	} {
		ucode, uout := ctl(t, uctl, "", append([]string{"--endpoints", up.ClientURL}, args...)...)
		ocode, oout := ctl(t, uctl, "", append([]string{"--endpoints", ours.ClientURL}, args...)...)
		if ucode != ocode || maskIdentity(uout) != maskIdentity(oout) {
			t.Errorf("etcdctl %v: ours exit %d\n%.600s\nupstream exit %d\n%.600s", args, ocode, oout, ucode, uout)
		}
		// Our etcdctl's get --stream, against upstream's server, prints what upstream's prints.
		ccode, cout := ctl(t, Binary(t, "etcdctl"), "", append([]string{"--endpoints", up.ClientURL}, args...)...)
		if ucode != ccode || maskIdentity(uout) != maskIdentity(cout) {
			t.Errorf("our etcdctl %v: exit %d\n%.600s\nupstream's exit %d\n%.600s", args, ccode, cout, ucode, uout)
		}
	}

	// The gateway has no mapping for it, on either.
	ucode, ubody := httpDo(t, "POST", up.ClientURL+"/v3/kv/rangestream", `{"key":"aw=="}`)
	ocode, obody := httpDo(t, "POST", ours.ClientURL+"/v3/kv/rangestream", `{"key":"aw=="}`)
	// (protojson spaces its output differently in every binary, by design: compare the values.)
	var uv, ov map[string]any
	if ucode != ocode || json.Unmarshal([]byte(ubody), &uv) != nil || json.Unmarshal([]byte(obody), &ov) != nil || !reflect.DeepEqual(uv, ov) {
		t.Errorf("gateway /v3/kv/rangestream: ours %d %s, upstream %d %s", ocode, obody, ucode, ubody)
	}

	// Level 3.6: no such method, as upstream 3.6.16.
	up36 := NewMember(t)
	up36.Bin = UpstreamBinaryAt(t, "v3.6.16", "etcd")
	ours36 := NewMember(t)
	ours36.Bin = ServerAt(t, LastReleaseLevel)
	up36.Start()
	ours36.Start()
	r := &req{Key: []byte("a")}
	_, uerr := streamChunks(t, up36.Client(), r)
	_, oerr := streamChunks(t, ours36.Client(), r)
	if uerr != oerr || !strings.Contains(oerr, "Unimplemented") {
		t.Errorf("RangeStream at 3.6: ours %q, upstream 3.6.16 %q", oerr, uerr)
	}
}

// memberIdentity matches what names the member answering (its IDs and term), in etcdctl's JSON
// and fields output.
var memberIdentity = regexp.MustCompile(`("cluster_id"|"member_id"|"raft_term"|"ClusterID" ?|"MemberID" ?|"RaftTerm" ?): ?\d+`)

func maskIdentity(s string) string { return memberIdentity.ReplaceAllString(normalize(s), "$1:<id>") }

// rssAnon reads a process's resident anonymous memory (its heap and stacks, leaving out the
// database file's mapped pages, which the kernel may drop at will).
func rssAnon(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "RssAnon:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no RssAnon in /proc/%d/status", pid)
}

// rangeStreamMemoryBound is what a member may add to its resident anonymous memory while it
// streams 1 GiB to a client (docs/compatibility.md): a few chunks in flight, not the result.
const rangeStreamMemoryBound = 64 << 20

// TestRangeStreamMemoryIsBoundedByTheChunk streams 1 GiB of values from our member and samples
// its resident anonymous memory throughout: the growth stays under rangeStreamMemoryBound, and
// every key arrives once, in order.
func TestRangeStreamMemoryIsBoundedByTheChunk(t *testing.T) {
	// The raft log keeps few entries, so the member holds little of the 1 GiB it was written
	// besides its database: what the stream adds is what is measured.
	m := NewMember(t, "--quota-backend-bytes", strconv.Itoa(4<<30), "--snapshot-count", "100", "--snapshot-catchup-entries", "10")
	m.Start()
	cl := m.Client()
	const keys, size = 1024, 1 << 20
	val := strings.Repeat("x", size-64)
	for i := 0; i < keys; i++ {
		if _, err := cl.Put(Ctx(t), fmt.Sprintf("big/%04d", i), val); err != nil {
			t.Fatal(err)
		}
	}
	before, err := rssAnon(m.Pid())
	if err != nil {
		t.Fatal(err)
	}
	var peak atomic.Int64
	peak.Store(before)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if v, err := rssAnon(m.Pid()); err == nil && v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := rangestream.Open(ctx, cl.ActiveConnection(), &pb.RangeRequest{Key: []byte("big/"), RangeEnd: []byte("big0")})
	if err != nil {
		t.Fatal(err)
	}
	got, chunks, bytes := 0, 0, int64(0)
	for {
		c, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		chunks++
		for _, kv := range c.Kvs {
			if want := fmt.Sprintf("big/%04d", got); string(kv.Key) != want {
				t.Fatalf("key %d is %s, want %s", got, kv.Key, want)
			}
			got++
			bytes += int64(len(kv.Value))
		}
		if c.Header != nil && c.Count != keys {
			t.Errorf("last chunk counts %d keys, want %d", c.Count, keys)
		}
	}
	close(stop)
	<-sampled
	if got != keys {
		t.Fatalf("streamed %d keys, want %d", got, keys)
	}
	growth := peak.Load() - before
	t.Logf("streamed %d MiB in %d chunks; resident anonymous memory %d MiB before, peak %d MiB (+%d MiB; bound %d MiB)",
		bytes>>20, chunks, before>>20, peak.Load()>>20, growth>>20, rangeStreamMemoryBound>>20)
	if growth > rangeStreamMemoryBound {
		t.Errorf("memory grew by %d MiB while streaming, over the bound of %d MiB", growth>>20, rangeStreamMemoryBound>>20)
	}
}
