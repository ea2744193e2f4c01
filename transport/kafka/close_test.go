package kafka

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// TestCloseSaysWhatWasNotAcknowledged: a Close whose broker stopped
// answering fails, after closeFlush, saying that what was published was
// not acknowledged, not a bare "context deadline exceeded".
func TestCloseSaysWhatWasNotAcknowledged(t *testing.T) {
	pub := publisherToKilledLogd(t)
	ctx := context.Background()
	if err := pub.Publish(ctx, transport.Message{Payload: []byte("two")}); err != nil {
		t.Fatal(err)
	}
	err := pub.Close()
	if err == nil || !strings.Contains(err.Error(), "kafka transport: close: what was published was not acknowledged within 5s") {
		t.Errorf("Close: %v", err)
	}
}

// TestCloseWaitsForReceipts: when Close returns, the done of every
// record PublishReceipt took has been called — here with the error of
// records the broker never acknowledged — so that a caller may release
// what its done uses (close a channel it sends to) once Close returns.
// Each done takes a moment, as a receiver's work would, so that receipts
// still on their way when Close returns are seen.
func TestCloseWaitsForReceipts(t *testing.T) {
	pub := publisherToKilledLogd(t)
	ctx := context.Background()
	const n = 50
	var called, failed atomic.Int64
	for range n {
		err := pub.PublishReceipt(ctx, transport.Message{Payload: []byte("lost")}, func(_ transport.Receipt, err error) {
			time.Sleep(2 * time.Millisecond)
			if err != nil {
				failed.Add(1)
			}
			called.Add(1)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Close(); err == nil {
		t.Error("Close: nil, with records unacknowledged")
	}
	if c, f := called.Load(), failed.Load(); c != n || f != n {
		t.Fatalf("when Close returned: %d of %d receipts called, %d failed", c, n, f)
	}
}

// TestGroupCloseBrokerGone: a group member's Close whose broker stopped
// answering (its connections wait in the listener's backlog) returns
// within a few seconds, with the commit's error, instead of waiting on
// the client's unbounded LeaveGroup (over a minute).
func TestGroupCloseBrokerGone(t *testing.T) {
	srv := startChildLogd(t)
	createTopic(t, srv.addr, "g", 1)
	cl := newClient(t, srv.addr)
	for i := range 3 {
		produce(t, cl, &kgo.Record{Topic: "g", Value: fmt.Appendf(nil, "%d", i)})
	}
	ctx := context.Background()
	g, err := NewGroupSubscriber(ctx, Config{Brokers: []string{srv.addr}, Topic: "g", Group: "gone", Options: groupOpts})
	if err != nil {
		t.Fatal(err)
	}
	ms := messages(receiveUntil(t, g, untilMessages(3)))
	if err := g.Ack(ctx, ms[2].Stream, ms[2].Seq); err != nil {
		t.Fatal(err)
	}
	srv.kill()
	closed := make(chan error, 1)
	go func() { closed <- g.Close() }()
	select {
	case err := <-closed:
		if err == nil || !strings.Contains(err.Error(), "commit on close") {
			t.Errorf("Close: %v, want the commit's error", err)
		}
	case <-time.After(testDeadline):
		t.Fatalf("Close still running after %v with the broker gone", testDeadline)
	}
}

// publisherToKilledLogd is a Publisher that has had one message
// acknowledged by a logd in a child process, now killed: its listener
// stays open, so connections wait in the backlog and nothing answers.
func publisherToKilledLogd(t *testing.T) *Publisher {
	t.Helper()
	srv := startChildLogd(t)
	pub := newPublisher(t, "logd://"+srv.addr+"/t")
	ctx := context.Background()
	if err := pub.Publish(ctx, transport.Message{Payload: []byte("one")}); err != nil {
		t.Fatal(err)
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	srv.kill()
	return pub
}

// TestConcurrentCloseWaits: a Close called while another is flushing
// waits for it and returns its result — here the error of what the
// broker never acknowledged — not nil at once, which would tell its
// caller that everything published was acknowledged; a Close after
// both returns that result again.
func TestConcurrentCloseWaits(t *testing.T) {
	pub := publisherToKilledLogd(t)
	if err := pub.Publish(context.Background(), transport.Message{Payload: []byte("two")}); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- pub.Close() }()
	<-pub.closing // the first Close is under way
	second := pub.Close()
	err := <-first
	if err == nil {
		t.Fatal("first Close: nil, with a record unacknowledged")
	}
	if second != err {
		t.Fatalf("second Close, called during the first: %v; the first returned %v", second, err)
	}
	if third := pub.Close(); third != err {
		t.Fatalf("Close after both: %v; the first returned %v", third, err)
	}
}

// TestGroupConcurrentCloseWaits: a group member's Close called while
// another is committing returns that Close's result, the commit's error
// here, not nil.
func TestGroupConcurrentCloseWaits(t *testing.T) {
	srv := startChildLogd(t)
	createTopic(t, srv.addr, "g", 1)
	produce(t, newClient(t, srv.addr), &kgo.Record{Topic: "g", Value: []byte("0")})
	ctx := context.Background()
	g, err := NewGroupSubscriber(ctx, Config{Brokers: []string{srv.addr}, Topic: "g", Group: "twice", Options: groupOpts})
	if err != nil {
		t.Fatal(err)
	}
	ms := messages(receiveUntil(t, g, untilMessages(1)))
	if err := g.Ack(ctx, ms[0].Stream, ms[0].Seq); err != nil {
		t.Fatal(err)
	}
	srv.kill()
	first := make(chan error, 1)
	go func() { first <- g.Close() }()
	<-g.closed // the first Close is under way
	second := g.Close()
	err = <-first
	if err == nil || !strings.Contains(err.Error(), "commit on close") {
		t.Fatalf("first Close: %v, want the commit's error", err)
	}
	if second != err {
		t.Fatalf("second Close, called during the first: %v; the first returned %v", second, err)
	}
}
