package multicast

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

// TestPublishReceipts: batches of messages, some fragmented, some with
// their own time, topic, key and headers, arrive whole and in order;
// done is called once a message with its index, in publish order, with
// the sequence number the subscriber sees.
func TestPublishReceipts(t *testing.T) {
	cfg := testConfig(t)
	s := mustSub(t, cfg)
	p := mustPub(t, cfg)
	const n, per = 3000, 97
	own := time.Unix(1_700_000_000, 123)
	msgs := make([]transport.Message, n)
	for i := range msgs {
		size := 64
		if i%50 == 0 {
			size = 5000 // four datagrams
		}
		msgs[i].Payload = indexed(i, size)
		if i%7 == 0 {
			msgs[i].Time, msgs[i].Topic, msgs[i].Key = own, "t", []byte("k")
			msgs[i].Headers = []transport.Header{{Key: "h", Value: []byte("v")}}
		}
	}
	var mu sync.Mutex
	seqOf := make([]uint64, 0, n)
	all := make(chan struct{})
	ctx := context.Background()
	for from := 0; from < n; from += per {
		batch := msgs[from:min(from+per, n)]
		taken, err := p.PublishReceipts(ctx, batch, func(i int, r transport.Receipt, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("receipt of message %d: %v", from+i, err)
			}
			if from+i != len(seqOf) {
				t.Errorf("receipt of message %d after %d receipts: not in publish order", from+i, len(seqOf))
			}
			if r.Stream != p.Stream() {
				t.Errorf("receipt %d names stream %v, the publisher is %v", from+i, r.Stream, p.Stream())
			}
			seqOf = append(seqOf, r.Seq)
			if len(seqOf) == n {
				close(all)
			}
		})
		if taken != len(batch) || err != nil {
			t.Fatalf("batch at %d: took %d of %d: %v", from, taken, len(batch), err)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var got []transport.Message
	for len(got) < n {
		ev, err := s.Receive(rctx)
		if err != nil {
			t.Fatalf("after %d messages: %v", len(got), err)
		}
		switch ev.Kind {
		case transport.EventMessage:
			m := ev.Message // its slices are valid until the next Receive
			m.Payload, m.Key = bytes.Clone(m.Payload), bytes.Clone(m.Key)
			m.Headers = slices.Clone(m.Headers)
			for j := range m.Headers {
				m.Headers[j].Value = bytes.Clone(m.Headers[j].Value)
			}
			got = append(got, m)
		case transport.EventGap:
			t.Fatalf("gap %v", ev.Gap)
		}
	}
	select {
	case <-all:
	case <-rctx.Done():
		t.Fatalf("%d receipts of %d", len(seqOf), n)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, m := range got {
		if indexOf(m.Payload) != i || len(m.Payload) != len(msgs[i].Payload) {
			t.Fatalf("message %d: got message %d of %d bytes", i, indexOf(m.Payload), len(m.Payload))
		}
		if m.Seq != seqOf[i] {
			t.Fatalf("message %d: receipt says seq %d, the subscriber got it as %d", i, seqOf[i], m.Seq)
		}
		if i%7 == 0 && (!m.Time.Equal(own) || m.Topic != "t" || string(m.Key) != "k" || len(m.Headers) != 1 || string(m.Headers[0].Value) != "v") {
			t.Fatalf("message %d lost its time, topic, key or headers: %+v", i, m)
		}
	}
}

// TestPublishBatchSharesTheCallsTime: messages without a time get the
// call's, all the same; one with a time keeps it.
func TestPublishBatchSharesTheCallsTime(t *testing.T) {
	cfg := testConfig(t)
	s := mustSub(t, cfg)
	p := mustPub(t, cfg)
	own := time.Unix(1_700_000_000, 0)
	ms := make([]transport.Message, 10)
	for i := range ms {
		ms[i].Payload = indexed(i, 64)
	}
	ms[4].Time = own
	before := time.Now()
	if n, err := p.PublishBatch(context.Background(), ms); n != len(ms) || err != nil {
		t.Fatalf("took %d of %d: %v", n, len(ms), err)
	}
	after := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var first time.Time
	for i := 0; i < len(ms); {
		ev, err := s.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind != transport.EventMessage {
			continue
		}
		tm := ev.Message.Time
		switch {
		case i == 4:
			if !tm.Equal(own) {
				t.Fatalf("message 4's own time became %v", tm)
			}
		case first.IsZero():
			first = tm
			if tm.Before(before.Add(-time.Millisecond)) || tm.After(after.Add(time.Millisecond)) {
				t.Fatalf("message %d's time %v is not the call's (%v..%v)", i, tm, before, after)
			}
		case !tm.Equal(first):
			t.Fatalf("message %d's time %v, message 0's %v: not the call's one time", i, tm, first)
		}
		i++
	}
}

// TestPublishBatchStops: a batch stops at a message it cannot take,
// returning how many it took before it and why; none after it is sent.
// A closed publisher takes nothing, and so does flow control with
// FlowFail or a context that ends.
func TestPublishBatchStops(t *testing.T) {
	cfg := testConfig(t)
	cfg.Sender.MaxMessageSize = 1000
	s := mustSub(t, cfg)
	p := mustPub(t, cfg)
	ms := []transport.Message{{Payload: indexed(0, 64)}, {Payload: indexed(1, 64)}, {Payload: indexed(2, 2000)}, {Payload: indexed(3, 64)}}
	if n, err := p.PublishBatch(context.Background(), ms); n != 2 || !errors.Is(err, transport.ErrTooLarge) {
		t.Fatalf("took %d (want 2): %v, want ErrTooLarge", n, err)
	}
	idx, gaps := collectFrom(t, s, p, 2, 5*time.Second)
	if len(gaps) != 0 || len(idx) != 2 || idx[0] != 0 || idx[1] != 1 {
		t.Fatalf("got messages %v, gaps %v: want 0, 1", idx, gaps)
	}
	if err := p.Publish(context.Background(), transport.Message{Payload: indexed(9, 64)}); err != nil {
		t.Fatal(err)
	}
	if idx, _ = collectFrom(t, s, p, 1, 5*time.Second); idx[0] != 9 {
		t.Fatalf("got message %v after the batch, want the next call's 9: the batch sent more than it took", idx)
	}
	p.Close()
	if n, err := p.PublishBatch(context.Background(), ms[:1]); n != 0 || !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("closed: took %d: %v", n, err)
	}
	if n, err := p.PublishBatch(context.Background(), nil); n != 0 || err != nil {
		t.Fatalf("empty batch: took %d: %v", n, err)
	}

	flow := testConfig(t)
	flow.Sender.Flow = reliable.FlowConfig{Mode: reliable.FlowMin, MinReceivers: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if n, err := mustPub(t, flow).PublishBatch(ctx, ms[:2]); n != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("no subscriber, waiting: took %d: %v, want the context's deadline", n, err)
	}
	flow.FlowFail = true
	flow.Group = testConfig(t).Group
	if n, err := mustPub(t, flow).PublishBatch(context.Background(), ms[:2]); n != 0 || !errors.Is(err, reliable.ErrFlowControl) {
		t.Fatalf("no subscriber, FlowFail: took %d: %v, want ErrFlowControl", n, err)
	}
}

// TestPublishBatchStoppedSendsWhatItTook: the messages a stopped batch
// took leave at once, though no other call comes to send them: its
// error wakes the send goroutine as a whole batch's end does. (No
// subscriber: one would send the publisher control datagrams, which
// wake the send goroutine too.)
func TestPublishBatchStoppedSendsWhatItTook(t *testing.T) {
	cfg := testConfig(t)
	cfg.Sender.MaxMessageSize = 1000
	cfg.Sender.HeartbeatMax = time.Minute
	p := mustPub(t, cfg)
	publishN(t, p, 0, 1, 64)
	// Heartbeats double from 1 ms: due at about 0.5 s and 1 s from here.
	time.Sleep(600 * time.Millisecond)
	before := p.Stats().Messages
	sent := p.Stats().Datagrams
	ms := []transport.Message{{Payload: indexed(1, 64)}, {Payload: indexed(2, 64)}, {Payload: indexed(3, 2000)}}
	if n, err := p.PublishBatch(context.Background(), ms); n != 2 || !errors.Is(err, transport.ErrTooLarge) {
		t.Fatalf("took %d (want 2): %v, want ErrTooLarge", n, err)
	}
	if p.Stats().Messages != before+2 {
		t.Fatalf("the engine took %d messages, want 2", p.Stats().Messages-before)
	}
	deadline := time.Now().Add(150 * time.Millisecond)
	for p.Stats().Datagrams == sent {
		if time.Now().After(deadline) {
			t.Fatal("the messages the batch took were not sent within 150 ms")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPublishBatchLongerThanTheQueue: a batch of many more datagrams
// than the send queue holds waits for the send goroutine in the middle
// of the call, and a slow subscriber under flow control still gets it
// all, with no gap.
func TestPublishBatchLongerThanTheQueue(t *testing.T) {
	const n = 20_000
	cfg := testConfig(t)
	cfg.Sender = reliable.SenderConfig{MaxMessageSize: 4096, MaxQueued: 16, WindowDatagrams: 64, WindowBytes: 64 * reliable.DefaultMTU,
		Flow: reliable.FlowConfig{Mode: reliable.FlowMin, MinReceivers: 1}}
	scfg := cfg
	scfg.Queue, scfg.RecvBuffer = 2, 64<<10
	s := mustSub(t, scfg)
	p := mustPub(t, cfg)
	ms := make([]transport.Message, n)
	for i := range ms {
		ms[i].Payload = indexed(i, 64)
	}
	errc := make(chan error, 1)
	go func() {
		taken, err := p.PublishBatch(context.Background(), ms)
		if err == nil && taken != n {
			err = errors.New("took fewer with no error")
		}
		errc <- err
	}()
	a := readSlowly(t, s, n)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if len(a.gaps) != 0 {
		t.Fatalf("gaps with flow control: %v", a.gaps)
	}
	if st := p.Stats(); st.Backpressure+st.FlowHeld == 0 {
		t.Fatalf("the batch never waited (%+v): the test shows nothing", st.SenderStats)
	}
}

// TestPublishBatchConcurrent: a batch and another goroutine's Publish
// calls at once: every message of each arrives, each goroutine's in its
// order (the batch lets go of the lock between chunks, so the other's
// may come between).
func TestPublishBatchConcurrent(t *testing.T) {
	const n = 5000
	cfg := testConfig(t)
	s := mustSub(t, cfg)
	p := mustPub(t, cfg)
	ms := make([]transport.Message, n)
	for i := range ms {
		ms[i].Payload = indexed(i, 64)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if taken, err := p.PublishBatch(context.Background(), ms); taken != n || err != nil {
			t.Errorf("batch took %d of %d: %v", taken, n, err)
		}
	}()
	go func() {
		defer wg.Done()
		publishN(t, p, n, n, 64)
	}()
	idx, gaps := collectFrom(t, s, p, 2*n, 20*time.Second)
	wg.Wait()
	if len(gaps) != 0 {
		t.Fatalf("gaps %v", gaps)
	}
	next := [2]int{0, n}
	for _, i := range idx {
		k := i / n
		if k > 1 || i != next[k] {
			t.Fatalf("message %d, expected %d or %d next", i, next[0], next[1])
		}
		next[k]++
	}
}

// TestPublishBatchTimesFollowSeq: Publish calls that come between
// the chunks of a long batch (here from the send goroutine's writes,
// on a clock that moves at every read) do not leave the batch's next
// messages with a publish time from before theirs: times never go back
// along the stream, as they do not with Publish calls alone.
func TestPublishBatchTimesFollowSeq(t *testing.T) {
	const n = 100_000
	var ns atomic.Int64
	ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	cfg := testConfig(t)
	cfg.Now = func() time.Time { return time.Unix(0, ns.Add(int64(time.Microsecond))) }
	cfg.Sender.HeartbeatMin, cfg.Sender.HeartbeatMax = time.Hour, time.Hour
	cfg.Sender.MaxQueued, cfg.Sender.WindowBytes = 8192, 32<<20 // the whole batch fits: no wait
	p := mustPub(t, cfg)
	var (
		mu       sync.Mutex // the send goroutine's writes, the test's reads
		times    []int64    // publish times along the stream
		singles  atomic.Int64
		batching atomic.Bool
		frames   []reliable.Frame
	)
	for set := false; !set; runtime.Gosched() {
		p.mu.Lock()
		if !p.writing {
			write := p.writeBatch
			p.writeBatch = func(wm []ipv4.Message, flags int) (int, error) {
				mu.Lock()
				for _, m := range wm {
					for _, b := range m.Buffers {
						h, err := reliable.ParseHeader(b)
						if err != nil || h.Type != reliable.TypeData {
							continue
						}
						if _, frames, err = reliable.ParseData(b, frames); err != nil {
							t.Errorf("a datagram sent: %v", err)
						}
						for _, f := range frames {
							times = append(times, f.Time)
						}
					}
				}
				mu.Unlock()
				if batching.Load() {
					// The batch holds the lock, but for the ends of
					// its chunks: this call gets it at one of them,
					// or after the batch.
					if err := p.Publish(context.Background(), transport.Message{Payload: indexed(n, 64)}); err != nil {
						t.Errorf("publish: %v", err)
					}
					singles.Add(1)
				}
				return write(wm, flags)
			}
			set = true
		}
		p.mu.Unlock()
	}
	ms := make([]transport.Message, n)
	for i := range ms {
		ms[i].Payload = indexed(i, 64)
	}
	const rounds = 4 // a call lands between chunks in about half the rounds
	for range rounds {
		batching.Store(true)
		taken, err := p.PublishBatch(context.Background(), ms)
		batching.Store(false)
		if taken != n || err != nil {
			t.Fatalf("batch took %d of %d: %v", taken, n, err)
		}
		// The queue empty again: the next round, and the calls
		// of the send goroutine's writes, do not wait for it.
		if err := p.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := rounds*n + int(singles.Load()); len(times) != want {
		t.Fatalf("%d messages sent, want %d", len(times), want)
	}
	back := 0
	for i := 1; i < len(times); i++ {
		if times[i] < times[i-1] {
			if back++; back == 1 {
				t.Errorf("message %d along the stream published at %d, the one before it at %d", i, times[i], times[i-1])
			}
		}
	}
	if back > 0 {
		t.Errorf("%d messages published at a time before the one ahead of them", back)
	}
}
