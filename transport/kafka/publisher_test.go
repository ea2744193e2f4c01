package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/logd"
	"github.com/brokerless/brokerless/logd/storage"
	"github.com/brokerless/brokerless/transport"
)

// TestPublishReceipt: every receipt names the partition and offset
// where its message landed, as a subscriber sees it; receipts come once
// each, in publish order per partition; a message the broker refuses
// gets its error in done; one PublishReceipt refuses gets no done.
func TestPublishReceipt(t *testing.T) {
	addr := startLogd(t)
	createTopic(t, addr, "rcpt", 3)
	ctx := context.Background()
	pub := newPublisher(t, "logd://"+addr+"/rcpt")

	const n = 300
	var (
		mu       sync.Mutex
		receipts = map[string]transport.Receipt{}
		order    = map[int32][]int{} // per partition, message indexes in done order
		calls    int
	)
	for i := range n {
		payload := fmt.Sprintf("m%d", i)
		err := pub.PublishReceipt(ctx, transport.Message{Key: fmt.Appendf(nil, "k%d", i%11), Payload: []byte(payload)},
			func(r transport.Receipt, err error) {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if err != nil {
					t.Errorf("%s: %v", payload, err)
					return
				}
				if _, dup := receipts[payload]; dup {
					t.Errorf("%s: second receipt", payload)
				}
				receipts[payload] = r
				order[r.Stream.Partition] = append(order[r.Stream.Partition], i)
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if calls != n || len(order) < 2 {
		t.Fatalf("%d receipts for %d messages over %d partitions", calls, n, len(order))
	}
	for p, idx := range order {
		for k := 1; k < len(idx); k++ {
			if idx[k] < idx[k-1] {
				t.Fatalf("partition %d: receipt of message %d after message %d's", p, idx[k-1], idx[k])
			}
		}
	}
	mu.Unlock()

	sub, err := NewSubscriber(ctx, parse(t, "logd://"+addr+"/rcpt"))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for _, m := range messages(receiveUntil(t, sub, untilMessages(n))) {
		if r := receipts[string(m.Payload)]; r.Stream != m.Stream || r.Seq != m.Seq {
			t.Errorf("%s: receipt %s@%d, delivered at %s@%d", m.Payload, r.Stream, r.Seq, m.Stream, m.Seq)
		}
	}

	// Refused by the client: larger than a batch may be.
	failed := make(chan error, 1)
	if err := pub.PublishReceipt(ctx, transport.Message{Payload: make([]byte, 2<<20)}, func(_ transport.Receipt, err error) { failed <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-failed; err == nil {
		t.Error("a 2 MiB record's done had no error")
	}
	// Refused by PublishReceipt: done must never be called.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := pub.PublishReceipt(cancelled, transport.Message{Payload: []byte("x")}, func(transport.Receipt, error) {
		t.Error("done called for a message PublishReceipt refused")
	}); !errors.Is(err, context.Canceled) {
		t.Errorf("PublishReceipt with a cancelled context: %v", err)
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestPublishOutlivesContext: a message Publish accepted is delivered
// even when the caller's context ends before the broker took it — here
// while logd is down — and then comes back.
func TestPublishOutlivesContext(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	serve := func(ln net.Listener) *logd.Server {
		srv, err := logd.New(logd.Config{Storage: storage.Config{Dir: dir}})
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(ln)
		return srv
	}
	srv := serve(ln)
	ctx := context.Background()
	cfg := parse(t, "logd://"+addr+"/outlive")
	pub, err := NewPublisher(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if err := pub.Publish(ctx, transport.Message{Payload: []byte("first")}); err != nil {
		t.Fatal(err)
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Close()

	short, cancel := context.WithCancel(ctx)
	if err := pub.Publish(short, transport.Message{Payload: []byte("second")}); err != nil {
		t.Fatal(err)
	}
	cancel() // logd is down: the record is still in the client's buffer

	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("logd's port was taken while it was down: %v", err)
	}
	srv = serve(ln)
	defer srv.Close()
	if err := pub.Flush(ctx); err != nil {
		t.Fatalf("Flush after the context of a Publish ended: %v", err)
	}
	sub, err := NewSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ms := messages(receiveUntil(t, sub, untilMessages(2)))
	if string(ms[1].Payload) != "second" {
		t.Fatalf("delivered %q, %q", ms[0].Payload, ms[1].Payload)
	}
}

// TestMaxBuffered: the publisher's slots match kgo's buffer, so Produce
// never blocks where Publish's context is not watched.
func TestMaxBuffered(t *testing.T) {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.MaxBufferedRecords(123))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if n := maxBuffered(cl); n != 123 {
		t.Fatalf("maxBuffered %d, want 123", n)
	}
}

// TestPublisherLinger: a publisher's client sends a partition's records
// at once unless Config.Linger says otherwise (kgo's own default would
// hold each for 10 ms).
func TestPublisherLinger(t *testing.T) {
	addr := startLogd(t)
	ctx := context.Background()
	for _, want := range []time.Duration{0, 7 * time.Millisecond} {
		p, err := NewPublisher(ctx, Config{Brokers: []string{addr}, Topic: "t", Linger: want})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.cl.OptValue(kgo.ProducerLinger); got != want {
			t.Errorf("Linger %v: the client lingers %v", want, got)
		}
		p.Close()
	}
}

// TestPublisherMaxBuffered: a publisher buffers Config.MaxBuffered
// records, librdkafka's 100,000 by default (kgo's own is 10,000), and
// its slots count as many.
func TestPublisherMaxBuffered(t *testing.T) {
	addr := startLogd(t)
	ctx := context.Background()
	for _, tc := range []struct{ cfg, want int }{{0, DefaultMaxBuffered}, {250, 250}} {
		p, err := NewPublisher(ctx, Config{Brokers: []string{addr}, Topic: "t", MaxBuffered: tc.cfg})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.cl.OptValue(kgo.MaxBufferedRecords); got != int64(tc.want) {
			t.Errorf("MaxBuffered %d: the client buffers %v records", tc.cfg, got)
		}
		if got := p.slots.free.Load(); got != int64(tc.want) {
			t.Errorf("MaxBuffered %d: %d slots", tc.cfg, got)
		}
		p.Close()
	}
}
