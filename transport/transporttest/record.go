package transporttest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// recorder receives from a subscriber and keeps a copy of every event.
type recorder struct {
	t      *testing.T
	sub    transport.Subscriber
	idle   time.Duration
	events []transport.Event
}

func newRecorder(t *testing.T, h Harness, sub transport.Subscriber) *recorder {
	return &recorder{t: t, sub: sub, idle: h.idle()}
}

// collect records events until stop (if non-nil) returns true for one,
// or, once published is closed, no event arrives for idle. It reports
// whether stop ended it. Receive failing, or receiveDeadline passing, is
// a test error.
func (r *recorder) collect(published <-chan struct{}, idle time.Duration, stop func(transport.Event) bool) bool {
	ctx, cancel := context.WithTimeout(r.t.Context(), receiveDeadline)
	defer cancel()
	for {
		rctx, rcancel := context.WithTimeout(ctx, idle)
		ev, err := r.sub.Receive(rctx)
		rcancel()
		switch {
		case err == nil:
			ev = cloneEvent(ev)
			r.events = append(r.events, ev)
			if stop != nil && stop(ev) {
				return true
			}
		case ctx.Err() != nil:
			r.t.Errorf("subscriber still busy after %v (%d events recorded): %v", receiveDeadline, len(r.events), err)
			return false
		case errors.Is(err, context.DeadlineExceeded) && isClosed(published):
			return false
		case !errors.Is(err, context.DeadlineExceeded):
			r.t.Errorf("Receive: %v", err)
			return false
		}
	}
}

// waitFor returns a stop function for collect that is satisfied once the
// messages with all the given indexes were delivered, or once the stream
// delivering them ends. With contiguous and a single index, a gap over
// that message's sequence number (known from the first delivered message,
// one sequence number per message) also satisfies it.
func waitFor(contiguous bool, idx ...int) func(transport.Event) bool {
	want := map[int]bool{}
	for _, i := range idx {
		want[i] = true
	}
	var (
		anchor   *delivery
		anchorID transport.StreamID
	)
	return func(ev transport.Event) bool {
		switch ev.Kind {
		case transport.EventMessage:
			i, err := PayloadIndex(ev.Message.Payload)
			if err != nil {
				return false
			}
			if anchor == nil {
				anchor, anchorID = &delivery{index: i, seq: ev.Message.Seq}, ev.Message.Stream
			}
			delete(want, i)
			return len(want) == 0
		case transport.EventGap:
			if !contiguous || anchor == nil || len(idx) != 1 || idx[0] < anchor.index || ev.Gap.Stream != anchorID {
				return false
			}
			seq := anchor.seq + uint64(idx[0]-anchor.index)
			return ev.Gap.From <= seq && seq <= ev.Gap.To
		case transport.EventStreamEnd:
			return anchor != nil && ev.End.Stream == anchorID
		}
		return false
	}
}

// positions returns the stream and position at which each message of
// events was first delivered, by payload index.
func positions(events []transport.Event) map[int]transport.Receipt {
	at := map[int]transport.Receipt{}
	for _, ev := range events {
		if ev.Kind != transport.EventMessage {
			continue
		}
		if idx, err := PayloadIndex(ev.Message.Payload); err == nil {
			if _, ok := at[idx]; !ok {
				at[idx] = transport.Receipt{Stream: ev.Message.Stream, Seq: ev.Message.Seq}
			}
		}
	}
	return at
}

// cloneEvent copies ev out of the subscriber's buffers, which are only
// valid until the next Receive.
func cloneEvent(ev transport.Event) transport.Event {
	m := &ev.Message
	m.Key = slices.Clone(m.Key)
	m.Payload = slices.Clone(m.Payload)
	if m.Headers != nil {
		hs := make([]transport.Header, len(m.Headers))
		for i, h := range m.Headers {
			hs[i] = transport.Header{Key: h.Key, Value: slices.Clone(h.Value)}
		}
		m.Headers = hs
	}
	return ev
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// closedChan is an already closed channel: nothing is being published.
var closedChan = func() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
