package kafka

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// TestCompression: a Publisher compresses its record batches with the
// codec its URL names, as a Kafka client sees them (kgo's record
// attributes), snappy when none is named; our Subscriber reads each
// back intact.
func TestCompression(t *testing.T) {
	addr := startLogd(t)
	ctx := context.Background()
	for _, tc := range []struct {
		param string
		attr  uint8 // Kafka's codec number in a batch's attributes
	}{{"", 2}, {"none", 0}, {"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4}} {
		topic := "c-" + tc.param
		raw := "logd://" + addr + "/" + topic
		if tc.param != "" {
			raw += "?compression=" + tc.param
		}
		pub, err := NewPublisher(ctx, parse(t, raw))
		if err != nil {
			t.Fatal(err)
		}
		const n = 20
		for i := range n {
			// Compressible enough that every codec shrinks even a batch
			// of one record (franz-go sends a batch that a codec does
			// not shrink uncompressed, and under load the first batch
			// may hold one record).
			if err := pub.Publish(ctx, transport.Message{Payload: compressible(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := pub.Close(); err != nil {
			t.Fatal(err)
		}
		cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		var got []*kgo.Record
		for len(got) < n && pctx.Err() == nil {
			got = append(got, cl.PollFetches(pctx).Records()...)
		}
		cancel()
		if len(got) != n {
			t.Fatalf("%s: a kgo consumer read %d of %d records", raw, len(got), n)
		}
		if c := got[0].Attrs.CompressionType(); c != tc.attr {
			t.Errorf("%s: batch codec %d, want %d", raw, c, tc.attr)
		}
		sub, err := NewSubscriber(ctx, parse(t, "logd://"+addr+"/"+topic))
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range messages(receiveUntil(t, sub, untilMessages(n))) {
			if want := compressible(i); string(m.Payload) != string(want) {
				t.Errorf("%s: message %d is %q", raw, i, m.Payload)
			}
		}
		sub.Close()
	}
}

// compressible is TestCompression's message i.
func compressible(i int) []byte {
	return fmt.Appendf(nil, "message %d of %s", i, strings.Repeat("a compressible feed, ", 12))
}
