package reliable

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// pipe runs a Sender straight into a Receiver, for allocation checks and
// benchmarks of the hot paths.
type pipe struct {
	s    *Sender
	r    *Receiver
	h    countHandler
	buf  []byte
	now  time.Time
	msg  transport.Message
	from netip.AddrPort
}

func newPipe(tb testing.TB, key []byte) *pipe {
	s, err := NewSender(SenderConfig{Session: 1, Key: key}, simEpoch)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := NewReceiver(ReceiverConfig{Rand: rand.New(rand.NewPCG(1, 1)), Key: key})
	if err != nil {
		tb.Fatal(err)
	}
	return &pipe{s: s, r: r, buf: make([]byte, DefaultMTU), now: simEpoch,
		msg: transport.Message{Topic: "AAPL", Payload: make([]byte, 64)}, from: mustAddrPort("127.0.0.1:1")}
}

// publish publishes one message, sending datagrams as they fill.
func (p *pipe) publish(tb testing.TB) {
	p.now = p.now.Add(time.Microsecond)
	if _, err := p.s.Publish(p.now, &p.msg); err == ErrBackpressure {
		p.drain()
		_, err = p.s.Publish(p.now, &p.msg)
		if err != nil {
			tb.Fatal(err)
		}
	} else if err != nil {
		tb.Fatal(err)
	}
	if p.s.win.unsent > 0 {
		p.drain()
	}
}

func (p *pipe) drain() {
	for {
		n, _, ok := p.s.NextOutgoing(p.now, p.buf)
		if !ok {
			return
		}
		_ = p.r.HandleDatagram(p.now, p.from, p.buf[:n], &p.h)
	}
}

func TestZeroAllocsPerMessage(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("allocation counts are not meaningful under -cover or -race")
	}
	for _, key := range [][]byte{nil, testKey} {
		p := newPipe(t, key)
		for i := 0; i < 50_000; i++ { // warm up: window slots and buffers
			p.publish(t)
		}
		allocs := testing.AllocsPerRun(20_000, func() { p.publish(t) })
		if allocs != 0 {
			t.Fatalf("key %v: %.3f allocations per message published and received", key != nil, allocs)
		}
		if p.h.gaps != 0 || p.h.messages < 69_000 {
			t.Fatalf("key %v: pipe broken: %+v", key != nil, p.h)
		}
	}
}

func BenchmarkSenderPublish(b *testing.B) {
	p := newPipe(b, nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(p.msg.Payload)))
	for b.Loop() {
		p.now = p.now.Add(time.Microsecond)
		if _, err := p.s.Publish(p.now, &p.msg); err == ErrBackpressure {
			for {
				if _, _, ok := p.s.NextOutgoing(p.now, p.buf); !ok {
					break
				}
			}
		}
	}
}

func BenchmarkPipe64B(b *testing.B) {
	for _, c := range []struct {
		name string
		key  []byte
	}{{"plain", nil}, {"key", testKey}} {
		b.Run(c.name, func(b *testing.B) {
			p := newPipe(b, c.key)
			b.ReportAllocs()
			b.SetBytes(int64(len(p.msg.Payload)))
			for b.Loop() {
				p.publish(b)
			}
		})
	}
}

// BenchmarkPipeLoss1Percent is BenchmarkPipe64B with one datagram in a
// hundred arriving 200 datagrams late (as a repair would behind a busy
// socket): the cost of holding frames behind a gap.
func BenchmarkPipeLoss1Percent(b *testing.B) {
	p := newPipe(b, nil)
	var late [][]byte
	var due []int
	sent := 0
	b.ReportAllocs()
	b.SetBytes(int64(len(p.msg.Payload)))
	for b.Loop() {
		p.now = p.now.Add(time.Microsecond)
		if _, err := p.s.Publish(p.now, &p.msg); err == ErrBackpressure {
			b.Fatal(err)
		}
		if p.s.win.unsent == 0 {
			continue
		}
		for {
			n, _, ok := p.s.NextOutgoing(p.now, p.buf)
			if !ok {
				break
			}
			sent++
			if sent%100 == 0 {
				late = append(late, append([]byte(nil), p.buf[:n]...))
				due = append(due, sent+200)
				continue
			}
			_ = p.r.HandleDatagram(p.now, p.from, p.buf[:n], &p.h)
			for len(due) > 0 && due[0] <= sent {
				_ = p.r.HandleDatagram(p.now, p.from, late[0], &p.h)
				late, due = late[1:], due[1:]
			}
		}
	}
}
