package zmq

import (
	"bytes"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestOutqCloseCounts: closing a queue says how many transport messages
// it dropped, and in how many ZMTP messages; heartbeats and
// subscriptions (no message) are not counted.
func TestOutqCloseCounts(t *testing.T) {
	q := newOutq(10, 1<<20)
	for _, n := range []int{1, 5, 0, 2} {
		if !q.tryPut(zmsg{frames: [][]byte{{1}}, size: 100, msgs: n}) {
			t.Fatal("queue refused a message")
		}
	}
	q.take(nil) // the writer took 1, 5, 0 and 2 ...
	q.tryPut(zmsg{frames: [][]byte{{1}}, size: 100, msgs: 3})
	q.tryPut(zmsg{frames: [][]byte{{1}}, size: 100})
	q.tryPut(zmsg{frames: [][]byte{{1}}, size: 100, msgs: 1})
	if msgs, zmtp := q.close(); msgs != 4 || zmtp != 2 {
		t.Fatalf("close dropped %d messages in %d ZMTP messages, want 4 in 2", msgs, zmtp)
	}
	if msgs, zmtp := q.close(); msgs != 0 || zmtp != 0 {
		t.Fatalf("second close dropped %d in %d", msgs, zmtp)
	}
}

// TestDiscardedCounted: what a publisher had queued for a subscriber
// that stopped reading, and threw away when Close gave up after
// Linger, is counted in Stats().Discarded. The subscriber's socket
// buffers take a few MiB at most, so of 48 MiB in 1 MiB messages most
// is discarded.
func TestDiscardedCounted(t *testing.T) {
	pub, ep := bound(t, Config{SubscriberQueueBytes: 256 << 20, SendQueueBytes: 64 << 20, Linger: 1, Heartbeat: -1})
	stalledSubscriber(t, ep)
	ctx := testCtx(t)
	if err := pub.WaitSubscribers(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	const n = 48
	payload := bytes.Repeat([]byte("x"), 1<<20)
	for range n {
		if err := pub.Publish(ctx, transport.Message{Topic: "t", Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	pub.Close()
	st := pub.Stats()
	if st.Discarded < n/2 || st.Discarded > n || st.DiscardedZMTP != st.Discarded || st.Dropped != 0 {
		t.Fatalf("stats %+v: want %d..%d of %d messages discarded (one ZMTP message each), none dropped", st, n/2, n, n)
	}
}
