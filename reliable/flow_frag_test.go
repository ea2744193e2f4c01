package reliable

import (
	"testing"
	"time"
)

// TestSimFlowControlFragments: as TestSimFlowControlWaitsForStoppedReceiver,
// with messages from one frame to three datagrams, 3% loss and some
// reordering: building a message's datagrams never evicts one the
// stopped receiver still needs (Publish reserves room for all of them,
// the open datagram's included), so both receivers get everything.
func TestSimFlowControlFragments(t *testing.T) {
	for _, size := range []int{32, 700, 1300, 1400, 2700, 4000} {
		for seed := uint64(1); seed < 4; seed++ {
			scfg := flowWindow
			scfg.Flow.Mode = FlowMin
			n := newSim(t, seed, scfg, ReceiverConfig{StatusWindow: 16 * DefaultMTU}, 2, simFaults{loss: 0.03, reorder: 0.02})
			n.publish(0, 100, 1, 10*time.Microsecond, 32)
			n.rcvs[0].until = n.now.Add(50 * time.Millisecond)
			n.publish(100, 1000, 3, 10*time.Microsecond, size)
			n.settle(300 * time.Millisecond)
			for _, rc := range n.rcvs {
				idx, gaps := rc.indexes()
				if len(gaps) > 0 || len(idx) != 1100 {
					t.Fatalf("size %d seed %d receiver %d: %d msgs, gaps %v\n%v", size, seed, rc.id, len(idx), gaps, n)
				}
			}
		}
	}
}
