package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestPublishReceipts: a batch's receipts name, by index, the partition
// and offset where each message landed, with its key, headers, time and
// payload, as a subscriber sees it; once each, in publish order per
// partition. A refused record's done gets its error; with a cancelled
// context none is taken.
func TestPublishReceipts(t *testing.T) {
	addr := startLogd(t)
	createTopic(t, addr, "batch", 3)
	ctx := context.Background()
	pub := newPublisher(t, "logd://"+addr+"/batch")

	const n, per = 300, 100
	var (
		mu       sync.Mutex
		receipts = map[string]transport.Receipt{}
		order    = map[int32][]int{}
		calls    int
	)
	base := time.UnixMilli(1_700_000_000_000)
	for from := 0; from < n; from += per {
		ms := make([]transport.Message, per)
		for j := range ms {
			i := from + j
			ms[j] = transport.Message{Key: fmt.Appendf(nil, "k%d", i%11), Payload: fmt.Appendf(nil, "m%d", i), Time: base.Add(time.Duration(i) * time.Millisecond),
				Headers: []transport.Header{{Key: "i", Value: fmt.Appendf(nil, "%d", i)}, {Key: "two", Value: []byte("2")}}}
		}
		took, err := pub.PublishReceipts(ctx, ms, func(j int, r transport.Receipt, err error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			i := from + j
			if err != nil {
				t.Errorf("m%d: %v", i, err)
				return
			}
			if _, dup := receipts[fmt.Sprintf("m%d", i)]; dup {
				t.Errorf("m%d: second receipt", i)
			}
			receipts[fmt.Sprintf("m%d", i)] = r
			order[r.Stream.Partition] = append(order[r.Stream.Partition], i)
		})
		if took != per || err != nil {
			t.Fatalf("took %d of %d: %v", took, per, err)
		}
		for j := range ms { // the caller's buffers are its own again
			ms[j].Payload[0], ms[j].Headers[0].Value[0] = 'X', 'X'
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
	sub, err := NewSubscriber(ctx, parse(t, "logd://"+addr+"/batch"))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for _, m := range messages(receiveUntil(t, sub, untilMessages(n))) {
		var i int
		fmt.Sscanf(string(m.Payload), "m%d", &i)
		r := receipts[string(m.Payload)]
		if r.Stream != m.Stream || r.Seq != m.Seq || string(m.Key) != fmt.Sprintf("k%d", i%11) || !m.Time.Equal(base.Add(time.Duration(i)*time.Millisecond)) ||
			len(m.Headers) != 2 || string(m.Headers[0].Value) != fmt.Sprint(i) || m.Headers[1].Key != "two" {
			t.Errorf("%s: receipt %s@%d, delivered %+v", m.Payload, r.Stream, r.Seq, m)
		}
	}

	failed := make(chan error, 2)
	took, err := pub.PublishReceipts(ctx, []transport.Message{{Payload: []byte("ok")}, {Payload: make([]byte, 2<<20)}}, func(i int, _ transport.Receipt, err error) {
		if i == 1 {
			failed <- err
		} else if err != nil {
			t.Errorf("message 0: %v", err)
		}
	})
	if took != 2 || err != nil {
		t.Fatalf("took %d: %v", took, err)
	}
	if err := <-failed; err == nil {
		t.Error("a 2 MiB record's done had no error")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if took, err := pub.PublishReceipts(cancelled, []transport.Message{{Payload: []byte("x")}}, func(int, transport.Receipt, error) {
		t.Error("done called for a message PublishReceipts did not take")
	}); took != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("PublishReceipts with a cancelled context: took %d, %v", took, err)
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestPublishReceiptsInPlace: in place, the records point at the
// messages' own bytes (PublishReceipts' copy them), and what is
// delivered is what was published though the caller reused ms and its
// header slices once the call returned.
func TestPublishReceiptsInPlace(t *testing.T) {
	ms := []transport.Message{{Key: []byte("k"), Payload: []byte("p0"), Headers: []transport.Header{{Key: "h", Value: []byte("v0")}}}}
	pub := &Publisher{topic: "t", partition: -1}
	for _, copied := range []bool{true, false} {
		r := &pub.newRecordBatch(ms, nil, copied).recs[0].r
		shared := &r.Value[0] == &ms[0].Payload[0] || &r.Key[0] == &ms[0].Key[0] || &r.Headers[0].Value[0] == &ms[0].Headers[0].Value[0]
		apart := &r.Value[0] != &ms[0].Payload[0] && &r.Key[0] != &ms[0].Key[0] && &r.Headers[0].Value[0] != &ms[0].Headers[0].Value[0]
		if copied && shared || !copied && apart {
			t.Errorf("copied %v: the record shares the message's bytes: %v, want %v", copied, shared, !copied)
		}
	}

	addr := startLogd(t)
	ctx := context.Background()
	p := newPublisher(t, "logd://"+addr+"/inplace")
	const n = 50
	payloads := make([][]byte, n)
	batch := make([]transport.Message, 0, 10)
	hs := make([]transport.Header, 0, 10)
	for i := range n {
		payloads[i] = fmt.Appendf(nil, "m%d", i)
		hs = append(hs, transport.Header{Key: "i", Value: payloads[i]})
		batch = append(batch, transport.Message{Payload: payloads[i], Headers: hs[len(hs)-1:]})
		if len(batch) < cap(batch) {
			continue
		}
		if took, err := p.PublishReceiptsInPlace(ctx, batch, func(_ int, _ transport.Receipt, err error) {
			if err != nil {
				t.Error(err)
			}
		}); took != len(batch) || err != nil {
			t.Fatalf("took %d of %d: %v", took, len(batch), err)
		}
		clear(hs) // the caller's again
		clear(batch)
		batch, hs = batch[:0], hs[:0]
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sub, err := NewSubscriber(ctx, parse(t, "logd://"+addr+"/inplace"))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for i, m := range messages(receiveUntil(t, sub, untilMessages(n))) {
		if string(m.Payload) != fmt.Sprintf("m%d", i) || len(m.Headers) != 1 || string(m.Headers[0].Value) != string(m.Payload) {
			t.Errorf("message %d: %q, headers %v", i, m.Payload, m.Headers)
		}
	}
}

// TestPublishReceiptsReusesBatches: batches come back from the pool
// after their receipts, including the first one produced to a topic the
// client did not know yet, whose record's context franz-go's
// metadata-waiting goroutine still holds (under -race, a batch reused by
// writing its records' contexts again is a data race with that
// goroutine).
func TestPublishReceiptsReusesBatches(t *testing.T) {
	addr := startLogd(t)
	createTopic(t, addr, "reuse", 1)
	ctx := context.Background()
	pub := newPublisher(t, "logd://"+addr+"/reuse")
	for i := range 20 {
		got := make(chan error, 2)
		ms := []transport.Message{{Payload: fmt.Appendf(nil, "m%d", i)}, {Payload: fmt.Appendf(nil, "n%d", i)}}
		if took, err := pub.PublishReceipts(ctx, ms, func(_ int, _ transport.Receipt, err error) { got <- err }); took != len(ms) || err != nil {
			t.Fatalf("call %d: took %d: %v", i, took, err)
		}
		for range ms {
			if err := <-got; err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
	}
}
