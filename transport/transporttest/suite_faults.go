package transporttest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// faultSeed seeds every fault the suite asks for, so a failure repeats.
const faultSeed = 1

// testAccounting publishes on a network with loss, duplicates and
// reordering (a clean one if the harness cannot inject them) and checks
// that every message, gap and stream event adds up (CheckAccounting and
// the checks of every claim).
func testAccounting(t *testing.T, h Harness) {
	f := Faults{Loss: 0.05, Duplicate: 0.05, Reorder: 0.05, Seed: faultSeed}
	p, err := tryPair(t, h, f)
	if errors.Is(err, ErrFaultsUnsupported) {
		t.Logf("harness cannot inject %+v, so on a clean network: %v", f, err)
		p = newPair(t, h, Faults{})
	} else if err != nil {
		t.Fatal(err)
	}
	checkLog(t, h, p.sem, bulk(t, h, p), h.messages(), bulkSize, true)
}

// testLoss checks the Retransmit claim: under 1% and 10% loss, with
// duplicates and reordering, every message arrives exactly once, in
// order, and no gap is reported.
func testLoss(t *testing.T, h Harness) {
	for _, loss := range []float64{0.01, 0.10} {
		t.Run(fmt.Sprintf("loss=%g", loss), func(t *testing.T) {
			p := newPair(t, h, Faults{Loss: loss, Duplicate: 0.01, Reorder: 0.01, Seed: faultSeed})
			if !p.sem.Has(transport.Retransmit) {
				t.Skipf("semantics %s do not claim retransmit", p.sem)
			}
			checkLog(t, h, p.sem, bulk(t, h, p), h.messages(), bulkSize, true)
		})
	}
}

// testGapReports checks the GapReports claim of a transport that does not
// retransmit: under 20% loss every lost message is covered by a gap.
func testGapReports(t *testing.T, h Harness) {
	p := newPair(t, h, Faults{Loss: 0.2, Seed: faultSeed})
	switch {
	case !p.sem.Has(transport.GapReports):
		t.Skipf("semantics %s do not claim gap reports", p.sem)
	case p.sem.Has(transport.Retransmit):
		t.Skipf("semantics %s claim retransmit: the Loss test covers them", p.sem)
	}
	events := bulk(t, h, p)
	checkLog(t, h, p.sem, events, h.messages(), bulkSize, true)
	for _, ev := range events {
		if ev.Kind == transport.EventGap && ev.Gap.Lost() {
			return
		}
	}
	t.Error("no gap of lost messages under 20% loss: is the harness injecting the faults it accepted?")
}
