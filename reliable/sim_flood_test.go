package reliable

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// floodRun publishes 20,000 messages at 20,000 per second to three
// subscribers losing 1% of datagrams while, when nacks > 0, an attacker
// who has read one datagram sends that many forged NACKs (each for
// about four datagrams somewhere in the publisher's window, as in issue
// 14) spread evenly over the second. It returns the sim and the
// subscribers' latency p99.
func floodRun(t *testing.T, scfg SenderConfig, nacks int) (*simNet, time.Duration) {
	n := newSim(t, 51, scfg, ReceiverConfig{}, 3, simFaults{loss: 0.01, cost: 5 * time.Microsecond})
	attacker := netip.MustParseAddrPort("10.6.6.6:6666")
	const steps, burst = 5000, 4
	perStep := nacks / steps
	payload := make([]byte, 64)
	var buf []byte
	for step := 0; step < steps; step++ {
		for i := 0; i < burst; i++ {
			binary.BigEndian.PutUint64(payload, uint64(step*burst+i))
			if _, err := n.sender.Publish(n.now, &transport.Message{Payload: payload}); err != nil {
				t.Fatal(err)
			}
		}
		next := n.sender.NextSeq()
		for i := 0; i < perStep; i++ {
			from := 1 + n.rng.Uint64N(next)
			buf = AppendRanges(buf[:0], TypeNack, n.sender.Stream(), []Range{{from, from + 4*16}})
			n.send(-1, attacker, buf)
		}
		n.runUntil(n.now.Add(200 * time.Microsecond))
	}
	n.settle(100 * time.Millisecond)
	var lats []time.Duration
	for _, rc := range n.rcvs {
		checkExactlyOnce(t, rc, steps*burst)
		lats = append(lats, rc.lats...)
	}
	slices.Sort(lats)
	return n, lats[len(lats)*99/100]
}

// TestSimNackFlood: 100,000 forged NACKs from one address during one
// second of a 20,000 messages/s feed. The publisher's budget for that
// address drops most of them and caps the repairs the rest cause at
// about the feed's own bandwidth, so real subscribers' p99 latency stays
// within twice what it is without the flood.
func TestSimNackFlood(t *testing.T) {
	base, p99 := floodRun(t, SenderConfig{}, 0)
	flood, p99Flood := floodRun(t, SenderConfig{}, 100_000)
	bs, fs := base.sender.Stats(), flood.sender.Stats()
	t.Logf("p99 %v without the flood, %v with it; repairs %d bytes without, %d with (%d NACKs over budget, %d repairs over budget)",
		p99, p99Flood, bs.RepairBytes, fs.RepairBytes, fs.NacksOverBudget, fs.RepairsOverBudget)
	if p99Flood > 2*p99 {
		t.Errorf("p99 %v under the flood, %v without: more than 2×", p99Flood, p99)
	}
	// What the attacker caused: at most what a new source starts with
	// (its share of the window, at most that of the new data sent), its
	// share of the new data sent (2) and its trickle (256 KiB/s) over
	// the 1.1 s run.
	bound := uint64(newSourceRepair) + uint64(2*DefaultSourceRepairShare*float64(fs.Bytes)) + DefaultSourceRepairRate*11/10
	if extra := fs.RepairBytes - bs.RepairBytes; fs.RepairBytes < bs.RepairBytes || extra > bound {
		t.Errorf("the flood caused %d bytes of repairs, bound %d (new data %d bytes)", extra, bound, fs.Bytes)
	}
	if fs.NacksOverBudget < 90_000 || fs.RepairsOverBudget == 0 {
		t.Errorf("budget not applied: %+v", fs)
	}
}
