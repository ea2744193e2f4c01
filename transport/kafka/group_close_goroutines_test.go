package kafka

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCloseLeavesNoCommitGoroutine: Close gives up on commits the
// broker does not answer (a commit in flight with the old mark, the
// commit of a data loss's reset point behind it, its own), but the
// goroutines that issued them end once it has closed the client, not
// when the broker answers (here: never, while the test runs).
func TestCloseLeavesNoCommitGoroutine(t *testing.T) {
	_, g, stream, inFlight, _ := heldCommit(t, 1, time.Hour)
	if err := g.Ack(context.Background(), stream, 9); err != nil {
		t.Fatal(err)
	}
	periodic(g)
	wait(t, inFlight, "the commit of 10")
	takeLoss(t, g, &kgo.ErrDataLoss{Topic: "loss", Partition: stream.Partition, ConsumedTo: 10, ConsumedToEpoch: -1, ResetTo: 6, ResetToEpoch: -1})
	t.Logf("Close: %v", g.Close())
	var left []string
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		left = commitGoroutines()
		if len(left) == 0 {
			return
		}
	}
	t.Fatalf("3s after Close, goroutines still in its commits:\n%s", strings.Join(left, "\n\n"))
}

// commitGoroutines returns the stacks of the goroutines in commitMarked
// or commitRewind.
func commitGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "kafka.(*GroupSubscriber).commitMarked") || strings.Contains(g, "kafka.(*Subscriber).commitRewind") {
			found = append(found, g)
		}
	}
	return found
}
