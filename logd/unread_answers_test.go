package logd

import (
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestUnwrittenAnswersBounded: a client that pipelines requests behind
// an acks=all produce (whose answer waits for its fsync) and does not
// take the answers gets one large answer held for it, not one per
// request: the connection handles no request while its unwritten
// answers hold connUnwrittenBytes or more. Each Fetch answer here
// carries 2 MiB of records read into memory (no sendfile): 16 of
// MaxFetchBytes (50 MiB) would hold 800 MiB for one connection. A
// Produce naming 12000 partitions of a missing topic, 100 KB, is
// answered with 1.2 MB of errors. Kafka reads no request of a
// connection while its previous answer is unsent (SocketServer mutes
// the channel).
func TestUnwrittenAnswersBounded(t *testing.T) {
	const requests = 6
	for _, tc := range []struct {
		name string
		send func(t *testing.T, c net.Conn, corr int32)
		key  kmsg.Key
	}{
		{"fetches", func(t *testing.T, c net.Conn, corr int32) {
			fetch := wholeFetch()
			if err := writeRequestCorr(c, corr, kmsg.Fetch.Int16(), fetch.GetVersion(), fetch.AppendTo(nil)); err != nil {
				t.Fatal(err)
			}
		}, kmsg.Fetch},
		{"failed produces", func(t *testing.T, c net.Conn, corr int32) {
			req := kmsg.NewPtrProduceRequest()
			req.SetVersion(9)
			req.Acks, req.TimeoutMillis = 1, 30_000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "missing"
			for p := range int32(12000) {
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Partition = p
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			if err := writeRequestCorr(c, corr, kmsg.Produce.Int16(), 9, req.AppendTo([]byte{0})); err != nil {
				t.Fatal(err)
			}
		}, kmsg.Produce},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Record sets are copied into the answers.
			ts, gate := gatedServer(t, 4, true, func(*Config) {})
			handled := func() uint64 { return handledCount(ts, tc.key) }

			entered := gate.close() // the produce's fsync waits: so do the answers behind it
			t.Cleanup(gate.open)
			c := dial(t, ts.addr)
			sendProduce(t, c, 1, "p", recordBatch([]byte("a")))
			<-entered
			before := handled()
			for i := range int32(requests) {
				tc.send(t, c, 2+i)
			}
			waitUntil(t, "a second request handled, or the connection pausing", func() bool {
				return handled()-before > 1 || ts.metrics.unwrittenWaits.Load() > 0
			})
			if n := handled() - before; n > 1 {
				t.Fatalf("the server handled %d of %d pipelined requests while their client took no answer, want 1 (the answers held %d bytes and more)", n, requests, connUnwrittenBytes)
			}
			gate.open()
			for i := range requests + 1 {
				if _, err := readFrame(c); err != nil {
					t.Fatalf("answer %d: %v", i+1, err)
				}
			}
			want := uint64(requests)
			if tc.key == kmsg.Produce {
				want++ // the acks=all produce ahead, counted once answered
			}
			if n := handled() - before; n != want {
				t.Errorf("%d requests handled once the answers were taken, want %d", n, want)
			}
		})
	}
}
