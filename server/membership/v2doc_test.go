package membership

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

// testdata/upstream-3.6.16-v2store.json is the data of a raft snapshot upstream etcd 3.6.16
// wrote: member a started, a learner added and not started, one member removed.
func TestDecodeUpstreamV2Store(t *testing.T) {
	b, err := os.ReadFile("testdata/upstream-3.6.16-v2store.json")
	if err != nil {
		t.Fatal(err)
	}
	st, ver, err := DecodeV2Store(b)
	if err != nil {
		t.Fatal(err)
	}
	want := State{
		Members: []Member{
			{ID: 0x2e1259d415f2a040, PeerURLs: []string{"http://127.0.0.1:23800"}, Name: "a", ClientURLs: []string{"http://127.0.0.1:23790"}},
			{ID: 0xb4a77019ef6efd9a, PeerURLs: []string{"http://127.0.0.1:23802"}, IsLearner: true},
		},
		Removed: []uint64{0xff2a57255f0d4d9d},
	}
	if !reflect.DeepEqual(st, want) || ver != "3.6.0" {
		t.Fatalf("decoded %+v %q\nwant    %+v", st, ver, want)
	}

	// Encoding the same state gives upstream's tree, node for node (indexes aside).
	out, err := EncodeV2Store(st, ver)
	if err != nil {
		t.Fatal(err)
	}
	var ours, theirs v2Doc
	if err := json.Unmarshal(out, &ours); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(b, &theirs)
	clearIndexes(ours.Root)
	clearIndexes(theirs.Root)
	if !reflect.DeepEqual(ours.Root, theirs.Root) {
		a, _ := json.MarshalIndent(ours.Root, "", " ")
		t.Fatalf("our tree differs from upstream's:\n%s", a)
	}
	if q := ours.WatcherHub.EventHistory.Queue; len(q.Events) != q.Capacity || q.Capacity != len(theirs.WatcherHub.EventHistory.Queue.Events) {
		t.Fatalf("event queue: %d slots, capacity %d; upstream has %d", len(q.Events), q.Capacity, len(theirs.WatcherHub.EventHistory.Queue.Events))
	}
	if ours.CurrentVersion != theirs.CurrentVersion {
		t.Fatalf("store version %d, upstream %d", ours.CurrentVersion, theirs.CurrentVersion)
	}
}

func clearIndexes(n *v2Node) {
	if n == nil {
		return
	}
	n.CreatedIndex, n.ModifiedIndex = 0, 0
	for _, c := range n.Children {
		clearIndexes(c)
	}
}

func TestV2StoreRejectsForeignDocuments(t *testing.T) {
	for name, doc := range map[string]string{
		"not json":              "\x00\x01",
		"no root":               `{"members":[{"id":1,"peerURLs":["http://a:1"]}]}`,
		"extra key in a member": `{"Root":{"Children":{"0":{"Children":{"members":{"Children":{"1":{"Children":{"raftAttributes":{"Value":"{\"peerURLs\":[\"http://a:1\"]}"},"x":{"Value":""}}}}}}}}}}`,
		"member without raft":   `{"Root":{"Children":{"0":{"Children":{"members":{"Children":{"1":{"Children":{}}}}}}}}}`,
	} {
		if _, _, err := DecodeV2Store([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}
