package transporttest

import (
	"fmt"
	"slices"

	"github.com/brokerless/brokerless/transport"
)

// CheckLossReported checks the GapReports claim on a log of messages
// 0..n-1 published in order by one publisher from one goroutine: every
// message that was not delivered is covered by a gap of lost messages
// (a gap left by compaction says nothing was lost), found between the
// sequence numbers of the nearest delivered messages before and after it
// (or before the first or after the last delivered one). Unlike
// CheckAccounting with contiguous set, it needs no assumption about how
// many sequence numbers a message uses. It returns a *Violation, or nil.
func CheckLossReported(events []transport.Event, n int) error {
	var (
		stream transport.StreamID
		got    []delivery
		gaps   []transport.Gap
	)
	for i, ev := range events {
		if ev.Kind != transport.EventMessage {
			continue
		}
		m := ev.Message
		idx, err := PayloadIndex(m.Payload)
		if err != nil {
			return &Violation{Check: "loss-reported", Event: i, Reason: err.Error()}
		}
		if len(got) == 0 {
			stream = m.Stream
		} else if m.Stream != stream {
			return &Violation{Check: "loss-reported", Event: i,
				Reason: fmt.Sprintf("message of stream %s after messages of %s: the check needs one stream", m.Stream, stream)}
		}
		if idx < n {
			got = append(got, delivery{index: idx, seq: m.Seq, event: i})
		}
	}
	for _, ev := range events {
		if ev.Kind == transport.EventGap && ev.Gap.Lost() && (len(got) == 0 || ev.Gap.Stream == stream) {
			gaps = append(gaps, ev.Gap)
		}
	}
	if len(got) == 0 {
		if n > 0 && len(gaps) == 0 {
			return &Violation{Check: "loss-reported", Event: -1,
				Reason: fmt.Sprintf("none of %d messages delivered and no gap reported", n)}
		}
		return nil
	}
	slices.SortFunc(got, func(a, b delivery) int { return a.index - b.index })
	return holesReported(got, gaps, n)
}

// delivery is a delivered message: its index, sequence number and place
// in the log.
type delivery struct {
	index int
	seq   uint64
	event int
}

// holesReported checks that every run of missing indexes around the
// delivered messages got (sorted by index) meets a gap.
func holesReported(got []delivery, gaps []transport.Gap, n int) error {
	if got[0].index > 0 && !gapMeets(gaps, nil, &got[0]) {
		return lost(0, got[0].index-1, got[0].event, fmt.Sprintf("no gap before seq %d", got[0].seq))
	}
	for k := 1; k < len(got); k++ {
		a, b := got[k-1], got[k]
		if b.index == a.index {
			continue
		}
		if b.seq <= a.seq {
			return &Violation{Check: "loss-reported", Event: b.event,
				Reason: fmt.Sprintf("message %d has seq %d, not above seq %d of message %d", b.index, b.seq, a.seq, a.index)}
		}
		if b.index > a.index+1 && !gapMeets(gaps, &a, &b) {
			return lost(a.index+1, b.index-1, b.event, fmt.Sprintf("no gap between seq %d and %d", a.seq, b.seq))
		}
	}
	if last := got[len(got)-1]; last.index < n-1 && !gapMeets(gaps, &last, nil) {
		return lost(last.index+1, n-1, -1, fmt.Sprintf("no gap after seq %d", last.seq))
	}
	return nil
}

// gapMeets reports whether a gap reaches into the sequence numbers
// strictly between after and before (nil: unbounded).
func gapMeets(gaps []transport.Gap, after, before *delivery) bool {
	for _, g := range gaps {
		if (after == nil || g.To > after.seq) && (before == nil || g.From < before.seq) {
			return true
		}
	}
	return false
}

// lost reports messages from..to lost without a gap.
func lost(from, to, event int, why string) error {
	what := fmt.Sprintf("message %d", from)
	if to > from {
		what = fmt.Sprintf("messages %d-%d", from, to)
	}
	return &Violation{Check: "loss-reported", Event: event, Reason: what + " lost silently: " + why}
}
