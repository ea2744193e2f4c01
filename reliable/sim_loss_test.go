package reliable

import (
	"fmt"
	"testing"
	"time"
)

func TestSimCleanNetwork(t *testing.T) {
	n := newSim(t, 1, SenderConfig{Feed: 7}, ReceiverConfig{}, 2, simFaults{})
	n.publish(0, 5000, 20, 20*time.Microsecond, 64)
	n.settle(50 * time.Millisecond)
	for _, rc := range n.rcvs {
		checkExactlyOnce(t, rc, 5000)
		checkAccounting(t, rc, true)
		if st := rc.r.Stats(); st.NacksSent != 0 || st.Duplicates != 0 {
			t.Fatalf("clean network: %+v", st)
		}
	}
	if st := n.sender.Stats(); st.Datagrams > 5000/9 {
		t.Fatalf("%d datagrams for 5000 messages of 64 bytes: not packing", st.Datagrams)
	}
}

// TestSimLoss is the acceptance test: 200,000 messages through
// 1%, 5% and 20% random loss with duplication and reordering, every one
// delivered exactly once, in order, with no gap.
func TestSimLoss(t *testing.T) {
	count := 200_000
	if testing.Short() {
		count = 20_000
	}
	for _, loss := range []float64{0.01, 0.05, 0.20} {
		t.Run(fmt.Sprintf("loss=%v", loss), func(t *testing.T) {
			f := simFaults{loss: loss, dup: 0.02, reorder: 0.05}
			n := newSim(t, 42, SenderConfig{}, ReceiverConfig{}, 3, f)
			n.publish(0, count, 16, 16*time.Microsecond, 64)
			n.settle(time.Second)
			for _, rc := range n.rcvs {
				checkExactlyOnce(t, rc, count)
				if rc.r.Stats().Recovered == 0 {
					t.Fatalf("nothing recovered at %v loss", loss)
				}
			}
			t.Logf("%v", n)
		})
	}
}
