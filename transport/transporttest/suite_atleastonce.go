package transporttest

import (
	"context"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// testAtLeastOnce checks the AtLeastOnce claim: what a subscriber did
// not acknowledge when it stopped is delivered again. The subscriber
// receives every message, acknowledges the first half (then, to no
// effect, a position below that: acknowledgements are cumulative) and
// is closed without acknowledging the rest. The subscriber
// Pair.NewGroupMember opens in its place must deliver every message of
// the second half, in order, at the same positions, and none of the
// first: the Close made the acknowledgements durable.
func testAtLeastOnce(t *testing.T, h Harness) {
	p := newPair(t, h, Faults{})
	if !p.sem.Has(transport.AtLeastOnce) {
		t.Skipf("semantics %s do not claim at-least-once", p.sem)
	}
	ack, ok := p.Sub.(transport.Acknowledger)
	switch {
	case !ok:
		t.Fatalf("semantics %s claim at-least-once, but the subscriber does not implement transport.Acknowledger", p.sem)
	case p.NewGroupMember == nil:
		t.Fatalf("semantics %s claim at-least-once, but the harness has no NewGroupMember to take over with", p.sem)
	}
	n := h.messages()
	half := n / 2
	r := newRecorder(t, h, p.Sub)
	done := publishAsync(t, p.pub, 0, n, bulkSize)
	r.collect(done, h.patientIdle(), waitFor(h.ContiguousSeq, n-1))
	awaitPublished(t, done)
	checkLog(t, h, p.sem, r.events, n, bulkSize, true)
	at := positions(r.events)

	ctx, cancel := context.WithTimeout(t.Context(), receiveDeadline)
	defer cancel()
	for _, k := range []int{half - 1, half/2 - 1} {
		pos, ok := at[k]
		if !ok {
			t.Fatalf("message %d not delivered, so it cannot be acknowledged (%s)", k, summary(r.events))
		}
		if err := ack.Ack(ctx, pos.Stream, pos.Seq); err != nil {
			t.Fatalf("Ack(%s, %d) of message %d: %v", pos.Stream, pos.Seq, k, err)
		}
	}
	p.closeSub()

	sub := p.openSubscriber("NewGroupMember", p.NewGroupMember)
	again := newRecorder(t, h, sub)
	again.collect(closedChan, h.patientIdle(), waitFor(false, n-1))
	t.Logf("the member that took over, after messages 0..%d were acknowledged: %s", half-1, summary(again.events))
	report(t, again.events, CheckRedelivered(again.events, half, n, p.sem.Has(transport.Deduplicated)))
	report(t, again.events, CheckPositions(again.events, at))
	report(t, again.events, CheckAccounting(again.events, h.ContiguousSeq))
	verifyMessages(t, h, again.events, bulkSize)
}
