package transporttest

import (
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// testOrdering publishes messages with every field set on a clean
// network and checks what arrives: one stream, in order, fields intact,
// and every message exactly once if the transport retransmits and
// deduplicates.
func testOrdering(t *testing.T, h Harness) {
	p := newPair(t, h, Faults{})
	events := bulk(t, h, p)
	id := oneStream(t, events)
	if id.IsZero() {
		t.Fatal("no message delivered")
	}
	checkLog(t, h, p.sem, events, h.messages(), bulkSize, true)
}

// bulk publishes h.messages() messages from one goroutine and records
// what the subscriber delivers.
func bulk(t *testing.T, h Harness, p *testPair) []transport.Event {
	t.Helper()
	n := h.messages()
	r := newRecorder(t, h, p.Sub)
	done := publishAsync(t, p.pub, 0, n, bulkSize)
	r.collect(done, r.idle, waitFor(h.ContiguousSeq, n-1))
	awaitPublished(t, done)
	return r.events
}
