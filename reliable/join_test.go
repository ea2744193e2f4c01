package reliable

import (
	"net/netip"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// joinRig is a Sender whose window already holds n one-byte messages,
// and a JoinEarliest Receiver about to meet its stream, its NACKs
// carried back to the Sender.
type joinRig struct {
	t    *testing.T
	now  time.Time
	s    *Sender
	r    *Receiver
	h    *recordHandler
	buf  []byte
	nack [][]byte
}

func newJoinRig(t *testing.T, scfg SenderConfig, rcfg ReceiverConfig, n int, flushEach bool) *joinRig {
	j := &joinRig{t: t, now: simEpoch, buf: make([]byte, 65536), h: &recordHandler{}}
	scfg.Rand = fixedRand(7)
	var err error
	if j.s, err = NewSender(scfg, j.now); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := j.s.Publish(j.now, &transport.Message{Payload: []byte("x")}); err != nil {
			j.drain(false)
			if _, err := j.s.Publish(j.now, &transport.Message{Payload: []byte("x")}); err != nil {
				t.Fatal(err)
			}
		}
		if flushEach {
			j.s.Flush()
			j.drain(false)
		}
	}
	j.s.Flush()
	j.drain(false)
	rcfg.Rand, rcfg.Join = fixedRand(0), JoinEarliest
	if j.r, err = NewReceiver(rcfg); err != nil {
		t.Fatal(err)
	}
	j.h.onNack = func(b []byte) { j.nack = append(j.nack, append([]byte(nil), b...)) }
	return j
}

// drain hands what the Sender has to send to the Receiver, if feed.
func (j *joinRig) drain(feed bool) {
	for {
		n, _, ok := j.s.NextOutgoing(j.now, j.buf)
		if !ok {
			return
		}
		if feed {
			_ = j.r.HandleDatagram(j.now, netip.MustParseAddrPort("127.0.0.1:5000"), j.buf[:n], j.h)
		}
	}
}

// live publishes one message a millisecond for d, the Receiver
// listening and its NACKs answered, then lets it settle.
func (j *joinRig) live(d time.Duration) {
	for t := time.Duration(0); t < d+3*time.Second; t += time.Millisecond {
		if t < d {
			if _, err := j.s.Publish(j.now, &transport.Message{Payload: []byte("y")}); err != nil {
				j.t.Fatal(err)
			}
			j.s.Flush()
		}
		j.drain(true)
		j.r.Poll(j.now, j.h)
		for _, b := range j.nack {
			_ = j.s.HandleControl(j.now, netip.MustParseAddrPort("127.0.0.1:7000"), b)
		}
		j.nack = j.nack[:0]
		j.drain(true)
		j.now = j.now.Add(time.Millisecond)
	}
}

// TestJoinEarliestWindowWiderThanMaxJump: a JoinEarliest receiver meets
// a stream whose retransmit window spans more sequence numbers than
// MaxJump (small messages, about a hundred a datagram). It starts at the
// window's low edge, but judges the publisher's live datagrams against
// the position the stream was met at, not against that low edge: none
// is dropped as a forged jump, and the whole window is recovered.
func TestJoinEarliestWindowWiderThanMaxJump(t *testing.T) {
	const history = 100_000
	j := newJoinRig(t, SenderConfig{}, ReceiverConfig{MaxJump: minMaxJump}, history, false)
	if low, top := j.s.win.low(j.s.SentNext()), j.s.SentNext()-1; low != 1 || top-low <= minMaxJump {
		t.Fatalf("window %d..%d", low, top)
	}
	j.live(400 * time.Millisecond)
	st := j.r.Stats()
	t.Logf("delivered %d, jumps %d, gaps %v", st.Delivered, st.Jumps, j.h.gapsOf())
	if st.Jumps != 0 || st.Delivered != history+400 || len(j.h.gapsOf()) != 0 {
		t.Fatalf("%d of %d messages delivered, %d live datagrams dropped as jumps, gaps %v", st.Delivered, history+400, st.Jumps, j.h.gapsOf())
	}
}

// TestJoinEarliestReportsOlderThanWindow: a JoinEarliest receiver
// starts at the oldest message the publisher's window still holds and,
// as documented, reports every older one as a Gap (unrecoverable: the
// publisher no longer holds them); its StreamStart names the first
// sequence number an event covers.
func TestJoinEarliestReportsOlderThanWindow(t *testing.T) {
	j := newJoinRig(t, SenderConfig{WindowDatagrams: 2048, MaxQueued: 1024}, ReceiverConfig{}, 3000, true)
	low := j.s.win.low(j.s.SentNext())
	if low <= 1 {
		t.Fatalf("window low %d: nothing left it", low)
	}
	j.live(10 * time.Millisecond)
	evs := j.h.evs
	if len(evs) < 2 || evs[0].Kind != transport.EventStreamStart || evs[0].Start.FirstSeq != 1 {
		t.Fatalf("first event %+v, want StreamStart at 1", evs[0])
	}
	// The window moves on while the receiver meets the stream: its low
	// edge is then at low or a little past it.
	g := evs[1]
	if g.Kind != transport.EventGap || g.Gap.From != 1 || g.Gap.To < low-1 || g.Gap.To > low+10 || g.Gap.Reason != transport.GapUnrecoverable {
		t.Fatalf("second event %v %v, want a Gap 1..%d or a little further, unrecoverable", g.Kind, g.Gap, low-1)
	}
	want := g.Gap.To + 1
	for _, e := range evs[2:] {
		if e.Kind != transport.EventMessage || e.Message.Seq != want {
			t.Fatalf("after the Gap, %+v; want message %d", e, want)
		}
		want++
	}
	if want != 3011 {
		t.Fatalf("delivered up to %d, want 3010", want-1)
	}
}
