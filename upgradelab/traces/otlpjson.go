package traces

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// OTLP JSON (the file format of the OpenTelemetry protocol, which Jaeger's and Grafana Tempo's
// importers read) is the protobuf JSON mapping of TracesData with three differences: field
// names in lowerCamelCase, enums as numbers, and trace and span IDs as hex instead of base64.
var idFields = map[string]bool{"traceId": true, "spanId": true, "parentSpanId": true}

// MarshalJSON encodes spans as one OTLP JSON TracesData document.
func MarshalJSON(spans []*tracepb.ResourceSpans) ([]byte, error) {
	b, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(&tracepb.TracesData{ResourceSpans: spans})
	if err != nil {
		return nil, fmt.Errorf("encode spans: %w", err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("re-read spans: %w", err)
	}
	if err := recodeIDs(doc, base64.StdEncoding.DecodeString, hex.EncodeToString); err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

// UnmarshalJSON reads an OTLP JSON TracesData document.
func UnmarshalJSON(b []byte) ([]*tracepb.ResourceSpans, error) {
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("read spans: %w", err)
	}
	if err := recodeIDs(doc, hex.DecodeString, base64.StdEncoding.EncodeToString); err != nil {
		return nil, err
	}
	pb, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var td tracepb.TracesData
	if err := protojson.Unmarshal(pb, &td); err != nil {
		return nil, fmt.Errorf("read spans: %w", err)
	}
	return td.ResourceSpans, nil
}

// recodeIDs rewrites every ID field of a decoded JSON document from one text encoding of its
// bytes to another.
func recodeIDs(v any, decode func(string) ([]byte, error), encode func([]byte) string) error {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if s, ok := val.(string); ok && idFields[k] {
				raw, err := decode(s)
				if err != nil {
					return fmt.Errorf("span field %s %q: %w", k, s, err)
				}
				x[k] = encode(raw)
				continue
			}
			if err := recodeIDs(val, decode, encode); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := recodeIDs(e, decode, encode); err != nil {
				return err
			}
		}
	}
	return nil
}
