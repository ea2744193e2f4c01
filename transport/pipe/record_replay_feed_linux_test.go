//go:build linux

package pipe_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

// TestReplayedFeed: BenchmarkRecorder's replayed feed is its
// publisher's feed. A subscriber that loses a datagram in 37, and the
// feed's last, gets every message, in order, with the payload published,
// no gap: the replay repairs from its window, and its heartbeat tells of
// the lost tail.
func TestReplayedFeed(t *testing.T) {
	payloads := randomPayloads(64)
	const n = 20_000
	// A capture window holding the whole feed: the replayed datagrams
	// announce it, and with the benchmark's (1,024 datagrams, most of
	// this feed) a subscriber slowed by -race on a loaded machine was
	// outpaced before a repair came (a Gap). Where the window ends is
	// the benchmark's matter; this test is about the replay's repairs.
	c := captureFeed(t, payloads, n, n)
	if c.messages() < n {
		t.Fatalf("captured %d messages, want %d", c.messages(), n)
	}
	last := c.next[len(c.next)-1]
	for i := range c.datagrams() {
		if last = c.next[i]; c.msgs[i] >= n {
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	group := randomBenchGroup()
	// No GRO: the filter sees each datagram alone.
	cfg := multicast.Config{Group: group, Interface: "lo", HostOnly: true, NoOffload: true,
		Filter: func() (multicast.DatagramFilter, error) { return &dropFilter{every: 37, last: last}, nil }}
	cfg.Receiver.Join = reliable.JoinEarliest
	sub, err := multicast.NewSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	_, stop := c.replay(t, group, 200_000, n, c.datagrams(), true)
	defer stop()
	for got := 0; got < n; {
		ev, err := sub.Receive(ctx)
		if err != nil {
			t.Fatalf("after %d messages: %v", got, err)
		}
		switch ev.Kind {
		case transport.EventMessage:
			if want := c.first + uint64(got); ev.Message.Seq != want {
				t.Fatalf("message %d: seq %d, want %d", got, ev.Message.Seq, want)
			}
			if !bytes.Equal(ev.Message.Payload, payloads[got%len(payloads)]) {
				t.Fatalf("message %d: not the payload published", got)
			}
			got++
		case transport.EventGap:
			t.Fatalf("after %d messages: %v; %+v", got, ev.Gap, sub.Stats())
		}
	}
	if s := sub.Stats(); s.Recovered == 0 || s.FilterDrops == 0 {
		t.Fatalf("nothing dropped and repaired: %+v", s)
	}
}

// dropFilter drops every every-th DATA datagram that is not a repair,
// and the first sending of the one that ends at sequence last; it hands
// the others back at once, in order.
type dropFilter struct {
	every, seen int
	last        uint64
	held        [][]byte
	from        []netip.AddrPort
	out         []byte
}

func (f *dropFilter) Push(_ time.Time, b []byte, from netip.AddrPort) bool {
	if len(b) > 28 && b[3] == byte(reliable.TypeData) && b[dataFlags]&dataFlagRepair == 0 {
		f.seen++
		count, first := binary.BigEndian.Uint16(b[18:]), binary.BigEndian.Uint64(b[20:])
		if f.seen%f.every == 0 || first+uint64(count) == f.last {
			return false
		}
	}
	f.held, f.from = append(f.held, bytes.Clone(b)), append(f.from, from)
	return true
}

func (f *dropFilter) Pop(time.Time) ([]byte, netip.AddrPort, bool) {
	if len(f.held) == 0 {
		return nil, netip.AddrPort{}, false
	}
	f.out, f.held = f.held[0], f.held[1:]
	from := f.from[0]
	f.from = f.from[1:]
	return f.out, from, true
}

func (f *dropFilter) NextDue() (time.Time, bool) { return time.Time{}, false }
