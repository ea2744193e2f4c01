package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestAckRacingClose: an Ack that has begun (it found the subscriber
// open) when Close begins either is in Close's commit, and returns nil,
// or returns ErrClosed: it must not return nil for a mark made after
// Close's commit read the marks, which no commit carries — its caller
// would count as committed what the next owner delivers again. Close
// waits for such an Ack, a few seconds at most (half closeFlush): one
// slower than that returns ErrClosed.
func TestAckRacingClose(t *testing.T) {
	for _, tc := range []struct {
		name string
		hold time.Duration // the Ack's pause, begun with Close; 0: until Close's commit returned
		want int64         // what Close commits
	}{
		{name: "Ack waited for", hold: 300 * time.Millisecond, want: 10},
		{name: "Ack slower than Close waits", want: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, g, stream := tenDelivered(t, time.Hour)
			closed := make(chan error, 1)
			g.acking = func() {
				go func() { closed <- g.Close() }()
				// Close's commit, unless it waits for this Ack, is
				// made and answered meanwhile.
				var after <-chan time.Time
				if tc.hold > 0 {
					after = time.After(tc.hold)
				}
				select {
				case <-g.closeCommitted:
				case <-after:
				}
			}
			ackErr := g.Ack(context.Background(), stream, 9)
			if err := <-closed; err != nil {
				t.Fatal(err)
			}
			c := committed(t, addr, "g", "loss", stream.Partition)
			switch {
			case ackErr == nil && c != 10:
				t.Fatalf("Ack racing Close returned nil, and Close committed %d, not 10: the acknowledgement is not committed", c)
			case ackErr != nil && !errors.Is(ackErr, transport.ErrClosed):
				t.Fatalf("Ack racing Close: %v, want nil or ErrClosed", ackErr)
			case c != tc.want:
				t.Fatalf("Close committed %d, want %d (Ack: %v)", c, tc.want, ackErr)
			}
		})
	}
}
