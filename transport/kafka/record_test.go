package kafka

import (
	"bytes"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestNewRecordCopies: the record owns copies of the key, payload and
// header values (the caller reuses its buffers once Publish returns),
// nil stays nil, and the copies do not overlap.
func TestNewRecordCopies(t *testing.T) {
	key, payload, v1, v2 := []byte("k"), []byte("payload"), []byte("one"), []byte("two")
	m := transport.Message{Topic: "t", Key: key, Payload: payload, Headers: []transport.Header{{Key: "a", Value: v1}, {Key: "b", Value: v2}, {Key: "c"}}}
	r := newRecord(m)
	for _, b := range [][]byte{key, payload, v1, v2} {
		for i := range b {
			b[i] = 'x'
		}
	}
	if string(r.Key) != "k" || string(r.Value) != "payload" || string(r.Headers[0].Value) != "one" || string(r.Headers[1].Value) != "two" {
		t.Fatalf("record changed with the caller's buffers: %q %q %q %q", r.Key, r.Value, r.Headers[0].Value, r.Headers[1].Value)
	}
	if r.Headers[2].Value != nil || len(r.Headers) != 3 || r.Topic != "t" {
		t.Fatalf("headers %+v topic %q", r.Headers, r.Topic)
	}
	r.Key = append(r.Key, "more"...) // must not run into the payload
	if !bytes.Equal(r.Value, []byte("payload")) {
		t.Fatalf("appending to the key overwrote the payload: %q", r.Value)
	}
	if r := newRecord(transport.Message{}); r.Key != nil || r.Value != nil || r.Headers != nil {
		t.Fatalf("nil fields became %+v", r)
	}
	if n := testing.AllocsPerRun(100, func() { newRecord(m) }); n > 3 {
		t.Errorf("%v allocations per record, want at most 3 (record, bytes, headers)", n)
	}
}
