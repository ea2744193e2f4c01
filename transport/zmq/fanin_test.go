package zmq

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/brokerless/brokerless/transport"
)

// TestFanInOneTopic: two publishers of the default feed publish the same
// topic at once, to a bound subscriber and through a proxy (one
// connection carries both): each is a stream of its own, delivered
// whole, and neither replaces the other.
func TestFanInOneTopic(t *testing.T) {
	const n = 20
	for _, viaProxy := range []bool{false, true} {
		t.Run(map[bool]string{false: "bound subscriber", true: "proxy"}[viaProxy], func(t *testing.T) {
			ctx := testCtx(t)
			var sub *Subscriber
			var ep string
			if viaProxy {
				_, xsub, xpub := startProxy(t, Config{})
				sub, ep = connected(t, xpub, Config{}), xsub
			} else {
				s, err := NewSubscriber(ctx, Config{Bind: []string{"tcp://127.0.0.1:0"}})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				sub, ep = s, "tcp://"+s.Addrs()[0].(*net.TCPAddr).String()
			}
			var pubs []*Publisher
			for range 2 {
				p, err := NewPublisher(ctx, Config{Connect: []string{ep}})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { p.Close() })
				if err := p.WaitSubscribers(ctx, "t", 1); err != nil {
					t.Fatal(err)
				}
				pubs = append(pubs, p)
			}
			for i := range n {
				for j, p := range pubs {
					if err := p.Publish(ctx, transport.Message{Topic: "t", Payload: fmt.Appendf(nil, "%d-%d", j, i)}); err != nil {
						t.Fatal(err)
					}
					if err := p.Flush(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, p := range pubs {
				p.Close() // ends its stream
			}
			got := map[transport.StreamID][]string{}
			ended := map[transport.StreamID]bool{}
			for ends := 0; ends < 2; {
				switch ev := receive(t, sub); ev.Kind {
				case transport.EventMessage:
					m := ev.Message
					if want := uint64(len(got[m.Stream]) + 1); m.Seq != want {
						t.Fatalf("stream %s: seq %d, want %d", m.Stream, m.Seq, want)
					}
					got[m.Stream] = append(got[m.Stream], string(m.Payload))
				case transport.EventGap:
					t.Fatalf("gap %+v: nothing was lost", ev.Gap)
				case transport.EventStreamStart:
					// Both are of one feed: the second may name the
					// first once that one has ended, never before.
					if r := ev.Start.Replaces; !r.IsZero() && !ended[r] {
						t.Fatalf("stream %s replaces %s, which is live", ev.Start.Stream, r)
					}
				case transport.EventStreamEnd:
					if ev.End.Reason != transport.EndClosed || ev.End.LastSeq != n {
						t.Fatalf("stream end %+v, want closed after seq %d", ev.End, n)
					}
					ended[ev.End.Stream] = true
					ends++
				}
				if st := sub.Stats(); st.Late != 0 {
					t.Fatalf("%d messages dropped as late; delivered %v", st.Late, got)
				}
			}
			if len(got) != 2 {
				t.Fatalf("%d streams, want one per publisher: %v", len(got), got)
			}
			for id, payloads := range got {
				for i, p := range payloads {
					if want := fmt.Sprintf("%s-%d", payloads[0][:1], i); p != want {
						t.Fatalf("stream %s: message %d is %q, want %q", id, i, p, want)
					}
				}
			}
		})
	}
}

// TestFanInPlainPublishers: two plain libzmq-style publishers (no
// header frame) send the same topic to one bound subscriber: each
// connection is a stream of its own, and every message is delivered.
func TestFanInPlainPublishers(t *testing.T) {
	ctx := testCtx(t)
	s, err := NewSubscriber(ctx, Config{Bind: []string{"tcp://127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ep := "tcp://" + s.Addrs()[0].(*net.TCPAddr).String()
	var pubs []zmq4.Socket
	for range 2 {
		p := zmq4.NewPub(context.Background())
		defer p.Close()
		if err := p.Dial(ep); err != nil {
			t.Fatal(err)
		}
		pubs = append(pubs, p)
	}
	// zmq4's PUB says nothing of when our subscription reached it: each
	// sends probes until one is delivered.
	streams := map[transport.StreamID]int{} // stream: publisher
	for j, p := range pubs {
		for {
			if err := p.Send(zmq4.NewMsgFrom([]byte("t"), fmt.Appendf(nil, "probe-%d", j))); err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			ev, err := s.Receive(rctx)
			cancel()
			if ctx.Err() != nil {
				t.Fatal("no probe delivered")
			}
			if err == nil && ev.Kind == transport.EventMessage && string(ev.Message.Payload) == fmt.Sprintf("probe-%d", j) {
				streams[ev.Message.Stream] = j
				break
			}
		}
	}
	const n = 20
	for i := range n {
		for j, p := range pubs {
			if err := p.Send(zmq4.NewMsgFrom([]byte("t"), fmt.Appendf(nil, "%d-%d", j, i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	next := [2]int{}
	for next[0]+next[1] < 2*n {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ev, err := s.Receive(rctx)
		cancel()
		if err != nil {
			t.Fatalf("delivered %v of %d per publisher, then %v; %d dropped as late", next, n, err, s.Stats().Late)
		}
		if ev.Kind != transport.EventMessage {
			continue
		}
		m := ev.Message
		var j, i int
		if _, err := fmt.Sscanf(string(m.Payload), "%d-%d", &j, &i); err != nil {
			continue // a probe sent again
		}
		if pj, ok := streams[m.Stream]; !ok || pj != j {
			t.Fatalf("publisher %d's message %q came in stream %s (streams %v)", j, m.Payload, m.Stream, streams)
		}
		if i != next[j] {
			t.Fatalf("publisher %d: message %d, want %d", j, i, next[j])
		}
		next[j]++
		if st := s.Stats(); st.Late != 0 {
			t.Fatalf("%d messages dropped as late after %v delivered", st.Late, next)
		}
	}
	if len(streams) != 2 || streams[transport.StreamID{}] != 0 {
		t.Fatalf("streams %v: want one per connection", streams)
	}
}
