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
	pub, err := NewPublisher(ctx, parse(t, "logd://"+addr+"/batch"))
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()

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
