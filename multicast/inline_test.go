package multicast

import (
	"context"
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

// TestPublishWritesAndAnswersNacks: a Publish call that finds no write in
// flight writes itself, and answers the NACKs waiting for the send
// goroutine first, so that a publisher writing from its own goroutine
// does not leave repairs behind. The NACK is put in the inbox without
// waking the send goroutine (and heartbeats are an hour apart), so only
// Publish can have answered it by the time it returns.
func TestPublishWritesAndAnswersNacks(t *testing.T) {
	p, clock := quietPublisher(t)
	ctx := context.Background()
	for i := range 10 {
		if err := p.Publish(ctx, transport.Message{Payload: indexed(i, 64)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitSendLoopAsleep(t, p)
	before := p.Stats()
	nack := reliable.AppendRanges(nil, reliable.TypeNack, p.Stream(), []reliable.Range{{From: 1, To: 1}})
	p.inbox.put(nack, netip.MustParseAddrPort("127.0.0.1:9"))
	clock.Advance(time.Millisecond) // a paced caller
	if err := p.Publish(ctx, transport.Message{Payload: indexed(10, 64)}); err != nil {
		t.Fatal(err)
	}
	after := p.Stats()
	if after.NacksReceived != before.NacksReceived+1 || after.Repairs == before.Repairs {
		t.Fatalf("Publish returned with the NACK unanswered: NACKs %d → %d, repairs %d → %d",
			before.NacksReceived, after.NacksReceived, before.Repairs, after.Repairs)
	}
	if after.Datagrams == before.Datagrams || after.SendCalls == before.SendCalls {
		t.Fatalf("Publish returned with its message unsent: datagrams %d → %d, send calls %d → %d",
			before.Datagrams, after.Datagrams, before.SendCalls, after.SendCalls)
	}
}

// TestPublishInlineWhenPaced: whether Publish writes itself depends on
// how long its caller was away since its previous Publish returned, not
// on whether the send goroutine sleeps. A paced caller (the injected
// clock moves 1 ms between calls) writes even while the send goroutine
// is awake (marked so here, as when a timer or a NACK has just woken it
// and the scheduler has not run it yet). When its last write took
// longer than its pace (2 ms here), it still writes itself the
// messages it comes back for at once, fewer than inlineRun. A burst
// after a pause, whose first write was quick, and a tight loop (the
// clock does not move) hand their messages to the send goroutine, which
// batches them, from their second call on.
func TestPublishInlineWhenPaced(t *testing.T) {
	p, clock := quietPublisher(t)
	ctx := context.Background()
	const paced, catchUp = 10, 3 // catchUp < inlineRun
	for i := range paced + catchUp {
		for woken := false; !woken; runtime.Gosched() {
			p.mu.Lock()
			if p.idle && !p.writing {
				p.idle, woken = false, true
			}
			p.mu.Unlock()
		}
		if i < paced {
			clock.Advance(time.Millisecond) // paced; then catching up, back at once
		}
		write := p.writeBatch
		if i == paced-1 {
			// This write takes longer than the pace: the caller falls
			// behind. (No write is in flight: see the loop above.)
			p.writeBatch = func(ms []ipv4.Message, flags int) (int, error) {
				clock.Advance(2 * time.Millisecond)
				return write(ms, flags)
			}
		}
		before := p.Stats()
		if err := p.Publish(ctx, transport.Message{Payload: indexed(i, 64)}); err != nil {
			t.Fatal(err)
		}
		after := p.Stats()
		p.mu.Lock()
		p.idle = true // the send goroutine still sleeps: nothing woke it
		p.writeBatch = write
		p.mu.Unlock()
		if after.InlineWrites != before.InlineWrites+1 || after.Datagrams != before.Datagrams+1 {
			t.Fatalf("paced Publish %d, send goroutine awake: inline writes %d → %d, datagrams %d → %d (want both +1)",
				i, before.InlineWrites, after.InlineWrites, before.Datagrams, after.Datagrams)
		}
	}
	// A burst after a pause: its first message is written inline, and
	// quickly, so the second is not.
	waitSendLoopAsleep(t, p)
	clock.Advance(time.Millisecond)
	before := p.Stats()
	for i := range 2 {
		if err := p.Publish(ctx, transport.Message{Payload: indexed(paced+catchUp+i, 64)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.Stats().InlineWrites - before.InlineWrites; got != 1 {
		t.Fatalf("a burst's first two messages after a pause: %d inline writes, want 1", got)
	}
	before = p.Stats()
	for i := range 100 {
		if err := p.Publish(ctx, transport.Message{Payload: indexed(paced+catchUp+2+i, 64)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	after := p.Stats()
	if after.InlineWrites != before.InlineWrites {
		t.Fatalf("a tight loop of 100 Publish calls wrote %d times itself", after.InlineWrites-before.InlineWrites)
	}
	if after.Datagrams == before.Datagrams {
		t.Fatal("the tight loop's messages were not sent")
	}
}

// TestPublishInlineWhenAwayLongerThanAWrite: a caller away for less
// than InlineAfter but longer than a write takes (each write moves the
// injected clock 2 µs; the caller comes back 5 µs later, as a feed paced
// at 100,000 msgs/s) writes every message itself: the last write is
// over when it comes back, so the send goroutine would batch nothing.
// One back sooner than the last inline write took (1 µs; the send
// goroutine's writes then leave the clock alone, so that they do not
// lengthen the caller's time away) hands its messages to the send
// goroutine.
func TestPublishInlineWhenAwayLongerThanAWrite(t *testing.T) {
	p, clock := quietPublisher(t)
	ctx := context.Background()
	var writeTakes atomic.Int64 // ns a write moves the clock
	for set := false; !set; runtime.Gosched() {
		p.mu.Lock() // a write in flight reads writeBatch: replace it between writes
		if !p.writing {
			write := p.writeBatch
			p.writeBatch = func(ms []ipv4.Message, flags int) (int, error) {
				clock.Advance(time.Duration(writeTakes.Load()))
				return write(ms, flags)
			}
			set = true
		}
		p.mu.Unlock()
	}
	publish := func(away time.Duration, n int) (inline uint64) {
		t.Helper()
		waitSendLoopAsleep(t, p)
		before := p.Stats()
		for i := range n {
			clock.Advance(away)
			if err := p.Publish(ctx, transport.Message{Payload: indexed(i, 64)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		return p.Stats().InlineWrites - before.InlineWrites
	}
	writeTakes.Store(int64(2 * time.Microsecond))
	publish(time.Millisecond, 1) // a first inline write: its time is known
	if got := publish(5*time.Microsecond, 20); got != 20 {
		t.Fatalf("away 5 µs, writes of 2 µs: %d of 20 messages written inline, want all", got)
	}
	writeTakes.Store(0)
	if got := publish(time.Microsecond, 20); got != 0 {
		t.Fatalf("away 1 µs, the last inline write 2 µs: %d of 20 messages written inline, want none", got)
	}
}

// manualClock is an injected clock that moves only when told.
type manualClock struct{ ns atomic.Int64 }

func newManualClock() *manualClock {
	c := new(manualClock)
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *manualClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *manualClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// waitSendLoopAsleep waits until p's send goroutine sleeps with nothing
// to send (it goes to sleep on its own after a Flush).
func waitSendLoopAsleep(t *testing.T, p *Publisher) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.mu.Lock()
		idle := p.idle && !p.writing
		p.mu.Unlock()
		if idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the send goroutine never went to sleep")
		}
		runtime.Gosched()
	}
}

// quietPublisher is a publisher on an injected clock whose heartbeats
// are an hour apart: its send goroutine wakes only for what a test does.
func quietPublisher(t *testing.T) (*Publisher, *manualClock) {
	t.Helper()
	clock := newManualClock()
	cfg := testConfig(t)
	cfg.Now = clock.Now
	cfg.Sender.HeartbeatMin, cfg.Sender.HeartbeatMax = time.Hour, time.Hour
	return mustPub(t, cfg), clock
}
