package transporttest

import (
	"fmt"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// testSemantics checks that publisher and subscriber declare the same
// semantics, and at least Ordered|GapReports: every brokerless transport
// orders each stream and makes loss visible. The subscriber must
// implement transport.Acknowledger if, and only if, it claims
// AtLeastOnce.
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
	if bad := ackClaim(p.Sub); bad != "" {
		t.Errorf("the subscriber %s", bad)
	}
}

// ackClaim says how sub breaks the rule that a subscriber implements
// transport.Acknowledger exactly when it claims AtLeastOnce, or "".
func ackClaim(sub transport.Subscriber) string {
	_, acks := sub.(transport.Acknowledger)
	claims := sub.Semantics().Has(transport.AtLeastOnce)
	switch {
	case claims && !acks:
		return fmt.Sprintf("claims %s but does not implement transport.Acknowledger", sub.Semantics())
	case acks && !claims:
		return fmt.Sprintf("implements transport.Acknowledger but claims %s, without at-least-once", sub.Semantics())
	}
	return ""
}
