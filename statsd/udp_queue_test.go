package statsd

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestUDPDrainedWhileAggregatorBusy: while the aggregator is held (as a
// flush holds it), the reading goroutine keeps draining the socket into
// its queue; nothing is lost, and everything is aggregated once the
// aggregator is free. The socket's buffer is the kernel's smallest, so
// a reader that waited for the aggregator would leave the datagrams in
// the kernel, which would drop them.
func TestUDPDrainedWhileAggregatorBusy(t *testing.T) {
	cfg := Config{RecvBuffer: 1, UDPReaders: 1}
	cfg.FlushInterval = time.Hour // no flush but the test's
	s := startServer(t, cfg)
	c, err := net.Dial("udp", s.UDPAddrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const n = udpQueueSlabs / 2
	s.mu.Lock()
	locked := true
	defer func() {
		if locked {
			s.mu.Unlock()
		}
	}()
	read0 := s.counters.datagrams.Load()
	for i := range n {
		if _, err := fmt.Fprintf(c, "busy.c:1|c\nbusy.g:%d|g", i); err != nil {
			t.Fatal(err)
		}
		// One datagram in the socket at a time: the reader must take
		// each before the next is sent.
		for s.counters.datagrams.Load() < read0+uint64(i+1) {
			if ctx.Err() != nil {
				t.Fatalf("with the aggregator held, the reader read %d of %d datagrams",
					s.counters.datagrams.Load()-read0, n)
			}
			runtime.Gosched()
		}
	}
	s.mu.Unlock()
	locked = false
	if err := s.WaitReceived(ctx, n, 2*n); err != nil {
		t.Fatal(err)
	}
	snap := s.Flush(ctx)
	checkValues(t, snapshotValues(snap), map[string]float64{"c busy.c": n, "g busy.g": n - 1})
	if snap.Server.Listen.KernelDrops != 0 {
		t.Errorf("kernel drops %d, want 0", snap.Server.Listen.KernelDrops)
	}
}

// TestUDPTruncated: a datagram longer than MaxDatagram is cut, counted
// as Truncated, and its whole lines are still read but not the one cut
// short (here "cut.c:1|c|@0.125" cut to "cut.c:1|c|@0.1", which would
// count 10 instead of 8); the next datagram is read whole.
func TestUDPTruncated(t *testing.T) {
	cfg := Config{MaxDatagram: 512, UDPReaders: 1}
	cfg.FlushInterval = time.Hour
	s := startServer(t, cfg)
	cut := "cut.c:1|c|@0.125"
	kept := len(cut) - 2
	pad := strings.Repeat("p", cfg.MaxDatagram-kept-len("long.c:1|c\n")-len(":1|c\n"))
	long := "long.c:1|c\n" + pad + ":1|c\n" + cut
	sendUDP(t, s.UDPAddrs()[0].String(), long, "short.c:2|c")
	waitReceived(t, s, 2, 3)
	snap := s.Flush(context.Background())
	if got := snap.Server.Listen.Truncated; got != 1 {
		t.Errorf("Truncated = %d, want 1", got)
	}
	got := snapshotValues(snap)
	checkValues(t, got, map[string]float64{"c long.c": 1, "c " + pad: 1, "c short.c": 2})
	if v, ok := got["c cut.c"]; ok {
		t.Errorf("cut.c = %v from the line cut short", v)
	}
}

// TestUDPReadAfterIdle: a reader whose socket stays empty for several of
// its poll timeouts keeps reading: datagrams sent before and after the
// idle spell are all aggregated, the timeouts count as no read error,
// and the server still stops (closing a socket waits for the read in
// progress; startServer's cleanup checks no goroutine is left).
func TestUDPReadAfterIdle(t *testing.T) {
	cfg := Config{UDPReaders: 1}
	cfg.FlushInterval = time.Hour
	s := startServer(t, cfg)
	addr := s.UDPAddrs()[0].String()
	sendUDP(t, addr, "idle.c:1|c")
	waitReceived(t, s, 1, 1)
	// The precondition is idleness itself: nothing to wait for but time.
	time.Sleep(4 * readerPollMillis * time.Millisecond)
	sendUDP(t, addr, "idle.c:2|c")
	waitReceived(t, s, 2, 2)
	snap := s.Flush(context.Background())
	checkValues(t, snapshotValues(snap), map[string]float64{"c idle.c": 3})
	if n := snap.Server.Listen.ReadErrors; n != 0 {
		t.Errorf("read errors %d, want 0", n)
	}
}

// TestUDPReaderAggregatesItself: at a low rate (one datagram in the
// socket at a time, the aggregator free) the reading goroutine
// aggregates each read itself instead of handing it to the parser.
func TestUDPReaderAggregatesItself(t *testing.T) {
	cfg := Config{UDPReaders: 1}
	cfg.FlushInterval = time.Hour // nothing else takes the aggregator
	s := startServer(t, cfg)
	r := s.udp[0]
	const n = 5
	for i := range n {
		sendUDP(t, s.UDPAddrs()[0].String(), "self.c:1|c")
		waitFor(t, func() bool { return r.ownReads.Load() == uint64(i+1) },
			func() string {
				return fmt.Sprintf("the reader aggregated %d of %d reads itself", r.ownReads.Load(), i+1)
			})
	}
	snap := s.Flush(context.Background())
	checkValues(t, snapshotValues(snap), map[string]float64{"c self.c": n})
}

// TestUDPOwnAndQueuedInOrder: a reader does not aggregate a read itself
// while a datagram it queued before is still on its way to the
// aggregator, or it would pass it: a gauge's last value wins whichever
// path each datagram took.
func TestUDPOwnAndQueuedInOrder(t *testing.T) {
	hold := &holdFirstPacket{entered: make(chan struct{}), release: make(chan struct{})}
	cfg := Config{UDPReaders: 1, Backends: []Backend{hold}}
	cfg.FlushInterval = time.Hour
	s := startServer(t, cfg)
	r, addr := s.udp[0], s.UDPAddrs()[0].String()
	s.mu.Lock() // the reader cannot aggregate the first datagram: it queues it
	sendUDP(t, addr, "order.g:1|g")
	<-hold.entered // the parser has it and is held before the aggregator
	s.mu.Unlock()
	sendUDP(t, addr, "order.g:2|g")
	// Queued behind the first, or (wrongly) aggregated at once.
	waitFor(t, func() bool {
		p, _ := s.Received()
		return r.q.pending.Load() == 2 || p > 0
	}, func() string { return "the reader neither queued nor aggregated the second datagram" })
	close(hold.release)
	waitReceived(t, s, 2, 2)
	snap := s.Flush(context.Background())
	checkValues(t, snapshotValues(snap), map[string]float64{"g order.g": 2})
	if got := r.ownReads.Load(); got != 0 {
		t.Errorf("the reader aggregated %d reads itself, want 0", got)
	}
}

// holdFirstPacket is a PacketBackend whose first Packet call waits for
// release, after closing entered.
type holdFirstPacket struct {
	entered, release chan struct{}
	calls            atomic.Int32
}

func (h *holdFirstPacket) Name() string                           { return "hold" }
func (h *holdFirstPacket) Flush(context.Context, *Snapshot) error { return nil }
func (h *holdFirstPacket) Packet([]byte) {
	if h.calls.Add(1) == 1 {
		close(h.entered)
		<-h.release
	}
}

// waitFor waits up to 10 s for cond, polling; past that it fails with
// what says.
func waitFor(t *testing.T, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %s", what())
		}
		time.Sleep(time.Millisecond)
	}
}
