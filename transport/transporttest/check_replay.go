package transporttest

import (
	"fmt"

	"github.com/brokerless/brokerless/transport"
)

// CheckReplayed checks a log read back from a stored position (the
// Durable and Replay claims): it delivers messages from..n-1 (by payload
// index) in index order, each first delivered right after the one before
// it, none missing, none outside from..n-1, and no gap of lost messages.
// With once (the Deduplicated claim) none is delivered twice; without
// it, a message may be delivered again after its first delivery (at
// least once), but never ahead of its turn. It returns a *Violation, or
// nil.
func CheckReplayed(events []transport.Event, from, n int, once bool) error {
	return sequence{
		check: "replayed", from: from, n: n, once: once,
		outside: func(idx int) string {
			return fmt.Sprintf("message %d delivered, but the log read back holds messages %d..%d", idx, from, n-1)
		},
		missing: "never read back",
	}.verify(events)
}

// CheckPositions checks that every message of events whose index is in
// at was delivered at the stream and position (Seq) that at gives it:
// where it was first delivered. A log read back must give each message
// the place it has always had. It returns a *Violation, or nil.
func CheckPositions(events []transport.Event, at map[int]transport.Receipt) error {
	for i, ev := range events {
		if ev.Kind != transport.EventMessage {
			continue
		}
		m := ev.Message
		idx, err := PayloadIndex(m.Payload)
		if err != nil {
			return &Violation{Check: "positions", Event: i, Reason: err.Error()}
		}
		want, ok := at[idx]
		if ok && (m.Stream != want.Stream || m.Seq != want.Seq) {
			return &Violation{Check: "positions", Event: i,
				Reason: fmt.Sprintf("message %d at %s seq %d, first delivered at %s seq %d", idx, m.Stream, m.Seq, want.Stream, want.Seq)}
		}
	}
	return nil
}

// sequence is what a log must deliver, in index order: messages
// from..n-1, each once if once is set.
type sequence struct {
	check   string
	from, n int
	once    bool
	outside func(idx int) string // why index idx, outside from..n-1, is wrong
	missing string               // says what befell the messages never delivered
}

// verify checks events against s.
func (s sequence) verify(events []transport.Event) error {
	next := s.from // the next index due for its first delivery
	firstAt := make(map[int]int)
	for i, ev := range events {
		switch ev.Kind {
		case transport.EventGap:
			if ev.Gap.Lost() {
				return &Violation{Check: s.check, Event: i, Reason: ev.Gap.String() + ": nothing stored may be lost"}
			}
		case transport.EventMessage:
			idx, err := PayloadIndex(ev.Message.Payload)
			switch {
			case err != nil:
				return &Violation{Check: s.check, Event: i, Reason: err.Error()}
			case idx < s.from || idx >= s.n:
				return &Violation{Check: s.check, Event: i, Reason: s.outside(idx)}
			case idx < next && s.once:
				return &Violation{Check: s.check, Event: i,
					Reason: fmt.Sprintf("message %d delivered again (first at event %d)", idx, firstAt[idx])}
			case idx > next:
				return &Violation{Check: s.check, Event: i,
					Reason: fmt.Sprintf("message %d delivered before message %d", idx, next)}
			case idx == next:
				firstAt[idx] = i
				next++
			}
		}
	}
	if next < s.n {
		what := fmt.Sprintf("message %d", next)
		if next < s.n-1 {
			what = fmt.Sprintf("messages %d-%d", next, s.n-1)
		}
		return &Violation{Check: s.check, Event: -1,
			Reason: fmt.Sprintf("%s of %d..%d %s", what, s.from, s.n-1, s.missing)}
	}
	return nil
}
