package transporttest

import (
	"context"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// testDefaultTime checks that a message published with a zero Time gets
// the time it was published: between the Publish call and its delivery.
func testDefaultTime(t *testing.T, h Harness) {
	p := newPair(t, h, Faults{})
	const size = 64
	m := message(0, size)
	m.Time = time.Time{}
	ctx, cancel := context.WithTimeout(t.Context(), receiveDeadline)
	defer cancel()
	before := time.Now()
	if err := p.pub.Publish(ctx, m); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if err := p.pub.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	r := newRecorder(t, h, p.Sub)
	r.collect(closedChan, r.idle, waitFor(h.ContiguousSeq, 0))
	after := time.Now()
	report(t, r.events, CheckDelivered(r.events, 1))
	for _, ev := range r.events {
		if ev.Kind != transport.EventMessage {
			continue
		}
		got := ev.Message.Time
		if got.Before(before.Add(-h.TimeResolution)) || got.After(after.Add(h.TimeResolution)) {
			t.Errorf("message published with a zero Time arrived with %s, not between %s and %s",
				got.Format(time.RFC3339Nano), before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano))
		}
		ev.Message.Time = message(0, size).Time
		if _, err := verifyMessage(ev.Message, fixedSize(size), 0); err != nil {
			t.Error(err)
		}
	}
}
