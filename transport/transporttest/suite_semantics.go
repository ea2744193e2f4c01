package transporttest

import (
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// testSemantics checks that publisher and subscriber declare the same
// semantics, and at least Ordered|GapReports: every brokerless transport
// orders each stream and makes loss visible.
func testSemantics(t *testing.T, h Harness) {
	p := newPair(t, h, Faults{})
	pub, sub := p.Pub.Semantics(), p.Sub.Semantics()
	t.Logf("semantics: %s", sub)
	if pub != sub {
		t.Errorf("publisher claims %s, subscriber claims %s", pub, sub)
	}
	if want := transport.Ordered | transport.GapReports; !sub.Has(want) {
		t.Errorf("semantics %s lack %s", sub, want)
	}
	if rest := sub & (transport.Durable | transport.Replay); rest != 0 {
		t.Logf("not exercised by this suite (they need a crash or an offset): %s", rest)
	}
}
