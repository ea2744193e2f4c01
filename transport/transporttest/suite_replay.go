package transporttest

import (
	"fmt"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// testReplay checks the Replay claim: a subscriber that starts at an
// earlier position (Pair.NewSubscriber) replays from there. It publishes
// messages, notes where the subscriber delivered them, and replays from
// the position of a message in the middle and from that of the last:
// each replay must deliver that message and every one after it, in
// order, at the positions they were first delivered at.
func testReplay(t *testing.T, h Harness) {
	p := newPair(t, h, Faults{})
	switch {
	case !p.sem.Has(transport.Replay):
		t.Skipf("semantics %s do not claim replay", p.sem)
	case p.NewSubscriber == nil:
		t.Fatalf("semantics %s claim replay, but the harness has no NewSubscriber to replay with", p.sem)
	}
	n := h.messages()
	r := newRecorder(t, h, p.Sub)
	done := publishAsync(t, p.pub, 0, n, bulkSize)
	r.collect(done, h.patientIdle(), waitFor(h.ContiguousSeq, n-1))
	awaitPublished(t, done)
	checkLog(t, h, p.sem, r.events, n, bulkSize, true)
	at := positions(r.events)
	for _, k := range []int{n / 3, n - 1} {
		from, ok := at[k]
		if !ok {
			t.Errorf("message %d not delivered, so there is no position to replay from", k)
			continue
		}
		sub := p.openSubscriber(fmt.Sprintf("NewSubscriber(%d)", from.Seq),
			func() (transport.Subscriber, error) { return p.NewSubscriber(from.Seq) })
		re := newRecorder(t, h, sub)
		re.collect(closedChan, h.patientIdle(), waitFor(false, n-1))
		t.Logf("replay from seq %d, the position of message %d: %s", from.Seq, k, summary(re.events))
		report(t, re.events, CheckReplayed(re.events, k, n, p.sem.Has(transport.Deduplicated)))
		report(t, re.events, CheckPositions(re.events, at))
		report(t, re.events, CheckAccounting(re.events, h.ContiguousSeq))
		verifyMessages(t, h, re.events, bulkSize)
	}
}
