package membership

import (
	"go.etcd.io/etcd/api/v3/membershippb"
	"google.golang.org/protobuf/encoding/protowire"
)

// versionField extends upstream's membershippb.Attributes with the publishing member's server
// version: an extra protobuf field that upstream's decoder keeps aside and ignores, so the
// cluster version is computed from replicated state instead of polling members.
const versionField = 1000

// Publish is the raft request a member sends when it starts: its name, client URLs and version.
func Publish(id uint64, name string, clientURLs []string, serverVersion string) *membershippb.ClusterMemberAttrSetRequest {
	a := &membershippb.Attributes{Name: name, ClientUrls: clientURLs}
	a.XXX_unrecognized = protowire.AppendString(protowire.AppendTag(nil, versionField, protowire.BytesType), serverVersion)
	return &membershippb.ClusterMemberAttrSetRequest{Member_ID: id, MemberAttributes: a}
}

// PublishedVersion returns the server version carried by Publish, or "" if there is none (an
// upstream member's request).
func PublishedVersion(a *membershippb.Attributes) string {
	b := a.XXX_unrecognized
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		if num == versionField && typ == protowire.BytesType {
			v, m := protowire.ConsumeString(b)
			if m < 0 {
				return ""
			}
			return v
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return ""
		}
		b = b[m:]
	}
	return ""
}
