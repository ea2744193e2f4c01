package transporttest

import (
	"context"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// testDurable checks the Durable claim: every message acknowledged (its
// publisher's Flush returned) before the transport's server process
// crashed is still there once it restarts. It publishes, restarts the
// server through Pair.RestartServer, publishes more on the same
// publisher, and checks that the subscriber carries on and that a new
// subscriber reading from the first position gets every message, in
// order, at the positions they were first delivered at.
func testDurable(t *testing.T, h Harness) {
	p := newPair(t, h, Faults{})
	switch {
	case !p.sem.Has(transport.Durable):
		t.Skipf("semantics %s do not claim durable", p.sem)
	case p.RestartServer == nil:
		t.Fatalf("semantics %s claim durable, but the harness has no RestartServer to crash the server with", p.sem)
	case p.NewSubscriber == nil:
		t.Fatalf("semantics %s claim durable, but the harness has no NewSubscriber to read the stored messages back with", p.sem)
	}
	n := h.messages()
	more := max(n/4, 4)
	r := newRecorder(t, h, p.Sub)
	done := publishAsync(t, p.pub, 0, n, bulkSize)
	r.collect(done, h.patientIdle(), waitFor(h.ContiguousSeq, n-1))
	awaitPublished(t, done)
	first, ok := positions(r.events)[0]
	if !ok {
		t.Fatalf("message 0 not delivered before the restart, so there is no position to read back from (%s)", summary(r.events))
	}

	if err := within(receiveDeadline, p.RestartServer); err != nil {
		t.Fatalf("RestartServer: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), receiveDeadline)
	defer cancel()
	if err := publishRange(ctx, p.pub, n, n+more, bulkSize); err != nil {
		t.Fatalf("after the server restarted: %v", err)
	}
	r.collect(closedChan, h.patientIdle(), waitFor(false, n+more-1))
	t.Log("the subscriber, across the restart:")
	checkLog(t, h, p.sem, r.events, n+more, bulkSize, true)
	report(t, r.events, CheckDelivered(r.events, n+more))

	sub := p.openSubscriber("NewSubscriber", func() (transport.Subscriber, error) { return p.NewSubscriber(first.Seq) })
	back := newRecorder(t, h, sub)
	back.collect(closedChan, h.patientIdle(), waitFor(false, n+more-1))
	t.Logf("a new subscriber from seq %d, the position of message 0: %s", first.Seq, summary(back.events))
	report(t, back.events, CheckReplayed(back.events, 0, n+more, p.sem.Has(transport.Deduplicated)))
	report(t, back.events, CheckPositions(back.events, positions(r.events)))
	report(t, back.events, CheckAccounting(back.events, h.ContiguousSeq))
	verifyMessages(t, h, back.events, bulkSize)
}
