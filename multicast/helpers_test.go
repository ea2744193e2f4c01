package multicast

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/faultnet"
)

// testConfig returns a Config on a random group and port (below the
// ephemeral ports, which wildcard-bound UDP sockets of other tests take) of the
// loopback interface, with a TTL of 0: test traffic never leaves the
// machine.
func testConfig(t testing.TB) Config {
	t.Helper()
	group := netip.AddrFrom4([4]byte{239, 255, byte(rand.IntN(256)), byte(1 + rand.IntN(254))})
	return Config{
		Group:       netip.AddrPortFrom(group, uint16(20000+rand.IntN(12768))),
		Interface:   "lo",
		HostOnly:    true,
		Feed:        uint32(1 + rand.IntN(1000)),
		CloseLinger: 200 * time.Millisecond,
	}
}

// faultnet.Filter is a DatagramFilter without either package naming the
// other's types.
var _ DatagramFilter = (*faultnet.Filter)(nil)

// withFaults returns cfg with f injected on a subscriber's receive path
// by a faultnet.Filter, one per subscriber; zero faults inject none.
func withFaults(cfg Config, f faultnet.Faults) Config {
	cfg.Filter = nil
	if !f.Zero() {
		cfg.Filter = func() (DatagramFilter, error) { return faultnet.NewFilter(f) }
	}
	return cfg
}

func mustPub(t testing.TB, cfg Config) *Publisher {
	t.Helper()
	p, err := NewPublisher(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func mustSub(t testing.TB, cfg Config) *Subscriber {
	t.Helper()
	s, err := NewSubscriber(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// indexed is a payload carrying an index in its first 8 bytes.
func indexed(i, size int) []byte {
	p := make([]byte, max(size, 8))
	binary.BigEndian.PutUint64(p, uint64(i))
	return p
}

// collect receives until want messages arrived (or a deadline passes)
// and returns the message indexes and gaps.
func collect(t testing.TB, s *Subscriber, want int, within time.Duration) (idx []int, gaps []transport.Gap) {
	return collectFrom(t, s, nil, want, within)
}

// collectFrom is collect that also reports p's stats on failure.
func collectFrom(t testing.TB, s *Subscriber, p *Publisher, want int, within time.Duration) (idx []int, gaps []transport.Gap) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	got := 0
	for got < want {
		ev, err := s.Receive(ctx)
		if err != nil {
			var ps any = "n/a"
			if p != nil {
				ps = p.Stats()
			}
			t.Fatalf("after %d of %d messages: %v\nsubscriber %+v\npublisher %+v", got, want, err, s.Stats(), ps)
		}
		switch ev.Kind {
		case transport.EventMessage:
			idx = append(idx, indexOf(ev.Message.Payload))
			got++
		case transport.EventGap:
			gaps = append(gaps, ev.Gap)
			got += int(ev.Gap.Len())
		}
	}
	return idx, gaps
}

// publishN publishes messages from..from+n-1 and flushes. It may run on
// its own goroutine: errors are reported with t.Error.
func publishN(t testing.TB, p *Publisher, from, n, size int) {
	publishAt(t, p, from, n, size, 0)
}

// publishAt is publishN at rate messages per second (0: as fast as it
// goes), open loop: bursts of 100 on a fixed schedule.
func publishAt(t testing.TB, p *Publisher, from, n, size, rate int) {
	ctx := context.Background()
	start := time.Now()
	for i := from; i < from+n; i++ {
		if rate > 0 && (i-from)%100 == 0 {
			time.Sleep(time.Until(start.Add(time.Duration(i-from) * time.Second / time.Duration(rate))))
		}
		if err := p.Publish(ctx, transport.Message{Payload: indexed(i, size)}); err != nil {
			t.Errorf("publish %d: %v", i, err)
			return
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Errorf("flush: %v", err)
	}
}

func indexOf(payload []byte) int { return int(binary.BigEndian.Uint64(payload)) }

// sendControl runs f on the socket p sends through: its send socket
// (sendsock_linux.go), or its NACK socket where it has none.
func sendControl(t testing.TB, p *Publisher, f func(fd uintptr)) {
	t.Helper()
	if p.send != nil {
		if err := p.send.control(f); err != nil {
			t.Fatal(err)
		}
		return
	}
	rc, err := p.conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Control(f); err != nil {
		t.Fatal(err)
	}
}

// closeSending closes the socket p sends through: every write fails
// from then on.
func closeSending(p *Publisher) {
	if p.send != nil {
		_ = p.send.close()
		return
	}
	_ = p.conn.Close()
}
