package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDataLossRewindsMark: offsets 0..9 delivered and offset 9
// acknowledged (the client holds the mark 10), then the broker reports
// that it lost the partition from offset 6 on, and the member resumes
// there: what the broker holds from 6 on now was never returned by
// Receive. The mark 10 must not be committed — by Close, or by a
// periodic commit — or the next owner skips those records: the commit
// goes back to the reset point, 6. (The loss is handed to take as the
// client returns it; the member's client, commits and marks are real.)
func TestDataLossRewindsMark(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval time.Duration // the member's autocommit interval
		close    bool          // the member stops with Close; else a periodic commit must write the reset point
	}{
		{name: "Close", interval: time.Hour, close: true},
		{name: "periodic commit", interval: 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, g, stream := tenDelivered(t, tc.interval)
			if err := g.Ack(context.Background(), stream, 9); err != nil {
				t.Fatal(err)
			}
			if !tc.close {
				awaitCommitted(t, addr, "loss", stream.Partition, 10)
			}
			takeLoss(t, g, &kgo.ErrDataLoss{Topic: "loss", Partition: stream.Partition, ConsumedTo: 10, ConsumedToEpoch: -1, ResetTo: 6, ResetToEpoch: -1})
			if tc.close {
				if err := g.Close(); err != nil {
					t.Fatal(err)
				}
				if c := committed(t, addr, "g", "loss", stream.Partition); c != 6 {
					t.Fatalf("committed %d after Close, want 6: the reset point, past which Receive has returned nothing since the loss", c)
				}
				return
			}
			awaitCommitted(t, addr, "loss", stream.Partition, 6)
		})
	}
}

// awaitCommitted waits until group "g" has committed want for topic's
// partition p, polling, and fails the test after 5 s.
func awaitCommitted(t *testing.T, addr, topic string, p int32, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		c := committed(t, addr, "g", topic, p)
		if c == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed %d, want %d", c, want)
		}
		<-tick.C
	}
}
