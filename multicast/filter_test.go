package multicast

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

// holdFirst is a DatagramFilter that keeps only the first DATA datagram
// it is offered, holds it for delay, and drops everything else.
type holdFirst struct {
	delay time.Duration
	buf   []byte
	from  netip.AddrPort
	due   time.Time
	held  bool
	taken bool
}

func (f *holdFirst) Push(now time.Time, b []byte, from netip.AddrPort) bool {
	if h, err := reliable.ParseHeader(b); err != nil || h.Type != reliable.TypeData || f.held || f.taken {
		return false
	}
	f.buf, f.from, f.due, f.held = append(f.buf[:0], b...), from, now.Add(f.delay), true
	return true
}

func (f *holdFirst) Pop(now time.Time) ([]byte, netip.AddrPort, bool) {
	if !f.held || now.Before(f.due) {
		return nil, netip.AddrPort{}, false
	}
	f.held, f.taken = false, true
	return f.buf, f.from, true
}

func (f *holdFirst) NextDue() (time.Time, bool) { return f.due, f.held }

// TestFilterHoldsAndDrops: a datagram the filter holds reaches the
// engine once due, though nothing else arrives to wake the reader (the
// Subscriber wakes for NextDue), and what it does not keep is counted.
func TestFilterHoldsAndDrops(t *testing.T) {
	cfg := testConfig(t)
	// No heartbeat after the first: once the DATA below is out, nothing
	// arrives to wake the subscriber.
	cfg.Sender.HeartbeatMin, cfg.Sender.HeartbeatMax = time.Minute, time.Minute
	const delay = 50 * time.Millisecond
	scfg := cfg
	scfg.Filter = func() (DatagramFilter, error) { return &holdFirst{delay: delay}, nil }
	s := mustSub(t, scfg)
	p := mustPub(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	for i := 1; i <= 5; i++ { // a datagram each; all but the first dropped
		payload := "dropped"
		if i == 1 {
			payload = "held"
		}
		if err := p.Publish(ctx, transport.Message{Payload: []byte(payload)}); err != nil {
			t.Fatal(err)
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for {
		ev, err := s.Receive(ctx)
		if err != nil {
			t.Fatalf("%v; stats %+v", err, s.Stats())
		}
		if ev.Kind != transport.EventMessage {
			continue
		}
		if string(ev.Message.Payload) != "held" || ev.Message.Seq != 1 {
			t.Fatalf("got %q seq %d", ev.Message.Payload, ev.Message.Seq)
		}
		break
	}
	if took := time.Since(start); took < delay {
		t.Fatalf("delivered after %v, before the filter's delay of %v", took, delay)
	}
	// The later DATA datagrams were flushed to the kernel before the held
	// one fell due, so the reader offered them to the filter first.
	if st := s.Stats(); st.FilterDrops < 4 {
		t.Fatalf("%d datagrams counted as dropped, want at least 4: %+v", st.FilterDrops, st)
	}
}

// TestFilterError: an error making the filter is NewSubscriber's.
func TestFilterError(t *testing.T) {
	cfg := testConfig(t)
	errNo := errors.New("no filter today")
	cfg.Filter = func() (DatagramFilter, error) { return nil, errNo }
	if _, err := NewSubscriber(context.Background(), cfg); !errors.Is(err, errNo) {
		t.Fatalf("NewSubscriber: %v", err)
	}
}
