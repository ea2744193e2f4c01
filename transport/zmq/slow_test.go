package zmq

import (
	"fmt"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"

	"github.com/brokerless/brokerless/transport"
)

// stalledSubscriber connects a SUB to ep that subscribes to everything
// and then never reads: its socket buffers fill and stay full.
func stalledSubscriber(t *testing.T, ep string) net.Conn {
	t.Helper()
	e, err := parseEndpoint(ep)
	if err != nil {
		t.Fatal(err)
	}
	// A small receive buffer fills at once.
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return serr
	}}
	c, err := d.Dial(e.network, e.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	zc, err := zmq4.Open(c, null.Security(), zmq4.Sub, nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := zc.SendMsg(zmq4.NewMsg([]byte{1})); err != nil {
		t.Fatal(err)
	}
	return c
}

// isolationRound publishes n messages of 64 bytes, at most four
// batches of 1,000 ahead of the fast subscriber (so that it never falls
// behind by more than its queue holds), and returns how long the fast
// subscriber took to receive them all.
func isolationRound(t *testing.T, pub *Publisher, fast *Subscriber, n int) time.Duration {
	t.Helper()
	const batch = 1000
	ctx := testCtx(t)
	payload := make([]byte, 64)
	window := make(chan struct{}, 4)
	start := time.Now()
	errc := make(chan error, 1)
	go func() {
		for i := range n {
			if i%batch == 0 {
				select {
				case window <- struct{}{}:
				case <-ctx.Done():
					errc <- ctx.Err()
					return
				}
			}
			if err := pub.Publish(ctx, transport.Message{Topic: "t", Payload: payload}); err != nil {
				errc <- fmt.Errorf("publish %d: %w", i, err)
				return
			}
		}
		errc <- nil
	}()
	for got := 0; got < n; {
		ev, err := fast.Receive(ctx)
		if err != nil {
			t.Fatalf("fast subscriber after %d of %d: %v", got, n, err)
		}
		switch ev.Kind {
		case transport.EventMessage:
			got++
			if got%batch == 0 {
				<-window
			}
		case transport.EventGap:
			t.Fatalf("fast subscriber lost %v", ev.Gap)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// TestSlowSubscriberIsolated: a subscriber that never reads sits beside
// a fast one. The fast one keeps at least 90% of its solo throughput
// (best of 5 to 15 interleaved rounds, solo and beside the stalled one), the
// publisher's memory stays under its bound (the stalled subscriber's
// queue and the fast one's, SubscriberQueueBytes each, plus
// SendQueueBytes, with 16 MiB of slack for the runtime and the fast
// subscriber's own buffers), and the drops are counted.
func TestSlowSubscriberIsolated(t *testing.T) {
	const (
		messages   = 200_000
		queueBytes = 8 << 20
		sendBytes  = 1 << 20
	)
	n := messages
	if raceEnabled {
		n = n / 10
	}
	cfg := Config{SubscriberQueue: 1 << 20, SubscriberQueueBytes: queueBytes, SendQueueBytes: sendBytes, Heartbeat: -1}
	pub, ep := bound(t, cfg)
	fast := connected(t, ep, Config{ReceiveQueue: 1 << 16})
	ctx := testCtx(t)
	if err := pub.WaitSubscribers(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	isolationRound(t, pub, fast, n/10) // warm up
	var solo, beside time.Duration
	var stalled net.Conn
	// Best of 5 rounds; on a machine busy enough to push the ratio
	// under 0.9, up to 15: the best of more rounds comes closer to what
	// each side costs, without loosening the bound.
	const minRounds, maxRounds = 5, 15
	rounds := 0
	for round := range maxRounds {
		if round >= minRounds && float64(solo)/float64(beside) >= 0.9 {
			break
		}
		rounds++
		d := isolationRound(t, pub, fast, n)
		if round == 0 || d < solo {
			solo = d
		}
		if stalled == nil {
			stalled = stalledSubscriber(t, ep)
			if err := pub.WaitSubscribers(ctx, "t", 2); err != nil {
				t.Fatal(err)
			}
		}
		d = isolationRound(t, pub, fast, n)
		if round == 0 || d < beside {
			beside = d
		}
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st := pub.Stats()
	ratio := float64(solo) / float64(beside)
	t.Logf("fast subscriber, best of %d rounds: %.0f msgs/s solo, %.0f beside a stalled one (%.2f); heap %.1f MiB; %+v",
		rounds, float64(n)/solo.Seconds(), float64(n)/beside.Seconds(), ratio, float64(ms.HeapAlloc)/(1<<20), st)
	// The ratio is a speed: under the race detector, which slows every
	// goroutine unevenly (and a 2-core CI machine running other
	// packages' tests beside this one), it says more about scheduling
	// than about isolation, so only the run without -race holds it to
	// the bound; the drops and the memory bound are checked in both.
	if ratio < 0.9 && !raceEnabled {
		t.Errorf("beside a stalled subscriber the fast one kept %.2f of its solo throughput, want >= 0.9", ratio)
	}
	if st.Dropped == 0 {
		t.Error("the stalled subscriber's drops were not counted")
	}
	const bound = 2*queueBytes + sendBytes + 16<<20
	if ms.HeapAlloc > bound {
		t.Errorf("heap %d bytes beside a stalled subscriber, bound %d", ms.HeapAlloc, bound)
	}
}

// TestSlowSubscriberDisconnected: with Slow Disconnect, a subscriber
// whose queue fills is disconnected and counted; the fast one loses
// nothing.
func TestSlowSubscriberDisconnected(t *testing.T) {
	pub, ep := bound(t, Config{SubscriberQueue: 1 << 20, SubscriberQueueBytes: 2 << 20, Slow: Disconnect, Heartbeat: -1})
	fast := connected(t, ep, Config{})
	ctx := testCtx(t)
	if err := pub.WaitSubscribers(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	stalledSubscriber(t, ep)
	if err := pub.WaitSubscribers(ctx, "t", 2); err != nil {
		t.Fatal(err)
	}
	isolationRound(t, pub, fast, 60_000)
	if st := pub.Stats(); st.SlowDisconnects != 1 {
		t.Errorf("stats %+v: want the stalled subscriber disconnected once", st)
	}
}

// TestGapsFromDrops: a subscriber that does not read while 5,000
// messages of 4 KB are published (20 MB: more than the publisher's
// queue, the loopback TCP buffers of both sides, which grow to several
// megabytes, and the subscriber's queue hold together) gets, once it
// reads, every message either delivered or covered by a gap, the gaps
// covering exactly what the publisher dropped for it.
func TestGapsFromDrops(t *testing.T) {
	for _, pack := range []bool{false, true} {
		t.Run(fmt.Sprintf("pack=%v", pack), func(t *testing.T) {
			ctx := testCtx(t)
			pub, ep := bound(t, Config{SubscriberQueue: 20, Pack: pack, PackBytes: 8 << 10, Heartbeat: 20 * time.Millisecond})
			sub := connected(t, ep, Config{ReceiveQueue: 10})
			if err := pub.WaitSubscribers(ctx, "t", 1); err != nil {
				t.Fatal(err)
			}
			const n = 5000
			pad := strings.Repeat("x", 4000)
			for i := range n {
				if err := pub.Publish(ctx, transport.Message{Topic: "t", Payload: []byte(strconv.Itoa(i) + ":" + pad)}); err != nil {
					t.Fatal(err)
				}
			}
			// No Flush here: what waits for the stalled subscriber's
			// socket is written only once it reads.
			seen := make([]int, n+1) // by seq: 1 delivered, 2 in a gap
			var gaps []transport.Gap
			for covered := 0; covered < n; {
				ev := receive(t, sub)
				switch ev.Kind {
				case transport.EventMessage:
					m := ev.Message
					if string(m.Payload) != strconv.Itoa(int(m.Seq)-1)+":"+pad {
						t.Fatalf("seq %d carries %q", m.Seq, m.Payload)
					}
					seen[m.Seq]++
					covered++
				case transport.EventGap:
					gaps = append(gaps, ev.Gap)
					for s := ev.Gap.From; s <= ev.Gap.To; s++ {
						seen[s] += 2
						covered++
					}
				}
			}
			if err := pub.Flush(ctx); err != nil { // everything is written or dropped by now
				t.Fatal(err)
			}
			if i := slices.IndexFunc(seen[1:], func(v int) bool { return v != 1 && v != 2 }); i >= 0 {
				t.Fatalf("seq %d delivered or reported %d times (1 delivered, 2 a gap)", i+1, seen[i+1])
			}
			lost := uint64(0)
			for _, g := range gaps {
				lost += g.Len()
				if g.Reason != transport.GapNoRecovery {
					t.Errorf("gap %v: reason %v", g, g.Reason)
				}
			}
			st := pub.Stats()
			if lost == 0 || lost != st.Dropped {
				t.Errorf("gaps cover %d messages in %d gaps, the publisher dropped %d", lost, len(gaps), st.Dropped)
			}
			t.Logf("%d gaps covering %d messages; publisher dropped %d in %d ZMTP messages", len(gaps), lost, st.Dropped, st.DroppedZMTP)
		})
	}
}
