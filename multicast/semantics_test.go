package multicast

import (
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestSemanticsHonest: multicast claims what it does (in order,
// deduplicated, repaired within the window, gaps reported) and nothing it
// does not: it stores nothing (not Durable), replays only the
// publisher's window (not Replay), and takes no acknowledgement (not
// AtLeastOnce, no Acknowledger). Its publisher gives receipts.
func TestSemanticsHonest(t *testing.T) {
	cfg := testConfig(t)
	s := mustSub(t, cfg)
	p := mustPub(t, cfg)
	want := transport.Ordered | transport.GapReports | transport.Retransmit | transport.Deduplicated
	for _, sem := range []transport.Semantics{p.Semantics(), s.Semantics()} {
		if sem != want {
			t.Errorf("semantics %s, want %s", sem, want)
		}
	}
	if _, ok := any(s).(transport.Acknowledger); ok {
		t.Error("the subscriber offers Acknowledger without claiming AtLeastOnce")
	}
	if _, ok := any(p).(transport.ReceiptPublisher); !ok {
		t.Error("the publisher gives no receipts")
	}
}
