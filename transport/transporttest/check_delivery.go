package transporttest

import (
	"fmt"
	"strings"

	"github.com/brokerless/brokerless/transport"
)

// The checkers in this file read the index of each message from its
// payload, so they apply to logs of messages published with [Payload].

// CheckExactlyOnce checks a log of messages 0..n-1 published on a
// network the transport fully recovers from (the Retransmit and
// Deduplicated claims): every message delivered exactly once and no gap
// of lost messages. (A gap left by compaction is not loss, but whatever
// it hides of 0..n-1 still counts as never delivered.) It returns a
// *Violation, or nil.
func CheckExactlyOnce(events []transport.Event, n int) error {
	if err := check(events, "exactly-once", n, true); err != nil {
		return err
	}
	return delivered(events, "exactly-once", n)
}

// CheckDelivered checks a log of messages 0..n-1 published on a network
// the transport fully recovers from (the Retransmit claim): every message
// delivered at least once and no gap of lost messages. It returns a
// *Violation, or nil.
func CheckDelivered(events []transport.Event, n int) error {
	if err := check(events, "delivered", n, false); err != nil {
		return err
	}
	return delivered(events, "delivered", n)
}

// CheckAtMostOnce checks the Deduplicated claim: no message delivered
// twice. It returns a *Violation, or nil.
func CheckAtMostOnce(events []transport.Event) error {
	return check(events, "at-most-once", -1, true)
}

// check reports a message whose payload is not from Payload, an index
// not below n (n >= 0) or, with once, an index delivered twice; and any
// gap of lost messages (Gap.Lost) when n >= 0.
func check(events []transport.Event, name string, n int, once bool) error {
	seen := map[int]int{}
	for i, ev := range events {
		switch ev.Kind {
		case transport.EventGap:
			if n >= 0 && ev.Gap.Lost() {
				return &Violation{Check: name, Event: i, Reason: ev.Gap.String() + ": nothing may be lost"}
			}
		case transport.EventMessage:
			idx, err := PayloadIndex(ev.Message.Payload)
			if err != nil {
				return &Violation{Check: name, Event: i, Reason: err.Error()}
			}
			if n >= 0 && idx >= n {
				return &Violation{Check: name, Event: i, Reason: fmt.Sprintf("message %d delivered, only %d published", idx, n)}
			}
			if first, dup := seen[idx]; dup && once {
				return &Violation{Check: name, Event: i, Reason: fmt.Sprintf("message %d delivered again (first at event %d)", idx, first)}
			}
			seen[idx] = i
		}
	}
	return nil
}

// delivered reports the messages of 0..n-1 missing from events.
func delivered(events []transport.Event, name string, n int) error {
	got := make([]bool, n)
	for _, ev := range events {
		if ev.Kind == transport.EventMessage {
			if idx, err := PayloadIndex(ev.Message.Payload); err == nil && idx < n {
				got[idx] = true
			}
		}
	}
	var missing []int
	for idx, ok := range got {
		if !ok {
			missing = append(missing, idx)
		}
	}
	if len(missing) > 0 {
		return &Violation{Check: name, Event: -1,
			Reason: fmt.Sprintf("%d of %d messages never delivered: %s", len(missing), n, ranges(missing))}
	}
	return nil
}

// ranges formats sorted indexes as "1-3, 7", up to ten ranges.
func ranges(idx []int) string {
	var b strings.Builder
	for k, i := 0, 0; i < len(idx); k++ {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if k == 10 {
			b.WriteString(", …")
			break
		}
		if k > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, idx[i])
		if j > i {
			fmt.Fprintf(&b, "-%d", idx[j])
		}
		i = j + 1
	}
	return b.String()
}
