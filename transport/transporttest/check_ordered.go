package transporttest

import (
	"fmt"

	"github.com/brokerless/brokerless/transport"
)

// CheckOrdered checks the Ordered claim on a recorded event log: per
// stream, message sequence numbers increase strictly. It returns a
// *Violation naming the first message out of order, or nil.
func CheckOrdered(events []transport.Event) error {
	last := map[transport.StreamID]uint64{}
	for i, ev := range events {
		if ev.Kind != transport.EventMessage {
			continue
		}
		m := ev.Message
		if prev, ok := last[m.Stream]; ok && m.Seq <= prev {
			return &Violation{Check: "ordered", Event: i,
				Reason: fmt.Sprintf("stream %s: seq %d delivered after seq %d", m.Stream, m.Seq, prev)}
		}
		last[m.Stream] = m.Seq
	}
	return nil
}
