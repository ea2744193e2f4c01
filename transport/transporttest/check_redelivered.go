package transporttest

import (
	"fmt"

	"github.com/brokerless/brokerless/transport"
)

// CheckRedelivered checks the AtLeastOnce claim on the log of the
// subscriber that took over from one that received messages 0..n-1,
// acknowledged 0..acked-1 and was closed: it delivers every message the
// other did not acknowledge, acked..n-1, in index order, and none it
// did (an acknowledgement made durable by a clean Close is never
// undone), and no gap of lost messages. With once (the Deduplicated
// claim) none is delivered twice. It returns a *Violation, or nil.
func CheckRedelivered(events []transport.Event, acked, n int, once bool) error {
	return sequence{
		check: "redelivered", from: acked, n: n, once: once,
		outside: func(idx int) string {
			if idx < acked {
				return fmt.Sprintf("message %d delivered again, but messages 0..%d were acknowledged", idx, acked-1)
			}
			return fmt.Sprintf("message %d delivered, only %d published", idx, n)
		},
		missing: "unacknowledged, never delivered again",
	}.verify(events)
}
