package transporttest

import (
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// testLargeMessage checks that payloads of MaxPayload and of an uneven
// size below it arrive intact on a clean network.
func testLargeMessage(t *testing.T, h Harness) {
	p := newPair(t, h, Faults{})
	sizes := []int{h.maxPayload(), max(h.maxPayload()/3+7, payloadHeader)}
	size := func(i int) int { return sizes[i] }
	r := newRecorder(t, h, p.Sub)
	done := publishAsync(t, p.pub, 0, len(sizes), size)
	r.collect(done, r.idle, waitFor(false, 0, 1))
	awaitPublished(t, done)
	t.Log(summary(r.events))
	report(t, r.events, CheckAccounting(r.events, h.ContiguousSeq))
	report(t, r.events, CheckDelivered(r.events, len(sizes)))
	if p.sem.Has(transport.Ordered) {
		report(t, r.events, CheckOrdered(r.events))
	}
	if p.sem.Has(transport.Deduplicated) {
		report(t, r.events, CheckAtMostOnce(r.events))
	}
	verifyMessages(t, h, r.events, size)
}
