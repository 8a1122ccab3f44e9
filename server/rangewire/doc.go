// Package rangewire holds a Range answer in its wire encoding. The database stores every
// key-value as the API's KeyValue message, so the kvs of a RangeResponse are those records, each
// behind a tag and a length: they are copied from the database once, into buffers that go to gRPC
// as they are (a large answer's are segments from a Pool). Decoding each record into a KeyValue
// and encoding the answer again cost two more copies and most of the CPU time of a large range,
// and the garbage they left set the member's memory under a large read; the segments of an
// answer that was sent go back to the Pool instead.
//
// The bytes are those of the generated Marshal (header, kvs, more, count, in field order).
//
// The files:
//
//	rangewire.go Response: a Range answer in its wire encoding; records and key-values
//	             encoded into a Pool's segments
//	pool.go      Pool: the segments large answers are written into, and those kept for reuse
package rangewire
