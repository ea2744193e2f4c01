package transporttest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// maxFieldErrors bounds how many bad messages a test reports.
const maxFieldErrors = 5

// checkLog runs on a recorded log of messages 0..n-1 (payloads of size(i)
// bytes) every check that the claims sem call for. inOrder says one
// goroutine published them in index order on one stream, which
// CheckLossReported needs.
func checkLog(t *testing.T, h Harness, sem transport.Semantics, events []transport.Event, n int, size func(int) int, inOrder bool) {
	t.Helper()
	t.Log(summary(events))
	report(t, events, CheckAccounting(events, h.ContiguousSeq))
	if sem.Has(transport.Ordered) {
		report(t, events, CheckOrdered(events))
	}
	switch {
	case sem.Has(transport.Retransmit | transport.Deduplicated):
		report(t, events, CheckExactlyOnce(events, n))
	case sem.Has(transport.Retransmit):
		report(t, events, CheckDelivered(events, n))
	case sem.Has(transport.Deduplicated):
		report(t, events, CheckAtMostOnce(events))
	}
	if sem.Has(transport.GapReports) && inOrder {
		report(t, events, CheckLossReported(events, n))
	}
	verifyMessages(t, h, events, size)
}

// verifyMessages checks that every delivered message carries what was
// published: payload, topic, key, headers and time.
func verifyMessages(t *testing.T, h Harness, events []transport.Event, size func(int) int) {
	t.Helper()
	bad := 0
	for i, ev := range events {
		if ev.Kind != transport.EventMessage {
			continue
		}
		if _, err := verifyMessage(ev.Message, size, h.TimeResolution); err != nil {
			if bad++; bad > maxFieldErrors {
				t.Errorf("more messages do not carry what was published; stopping at %d", maxFieldErrors)
				return
			}
			t.Errorf("event %d: %v", i, err)
		}
	}
}

// oneStream returns the stream of the messages in events and reports an
// error if there are several, or a stream-start names another.
func oneStream(t *testing.T, events []transport.Event) transport.StreamID {
	t.Helper()
	var id transport.StreamID
	for i, ev := range events {
		if ev.Kind != transport.EventMessage {
			continue
		}
		switch {
		case id.IsZero():
			id = ev.Message.Stream
		case ev.Message.Stream != id:
			t.Errorf("event %d: message of stream %s after messages of %s; one publisher makes one stream", i, ev.Message.Stream, id)
			return id
		}
	}
	for i, ev := range events {
		if ev.Kind == transport.EventStreamStart && !id.IsZero() && ev.Start.Stream != id {
			t.Errorf("event %d: stream-start of %s, but the messages came from %s", i, ev.Start.Stream, id)
		}
	}
	return id
}

// report reports err, with the events around a violation.
func report(t *testing.T, events []transport.Event, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var v *Violation
	if !errors.As(err, &v) || v.Event < 0 {
		t.Error(err)
		return
	}
	var b strings.Builder
	for i := max(0, v.Event-3); i < min(len(events), v.Event+3); i++ {
		mark := "  "
		if i == v.Event {
			mark = "> "
		}
		fmt.Fprintf(&b, "\n%s%d: %s", mark, i, describe(events[i]))
	}
	t.Errorf("%v%s", err, b.String())
}

// describe formats an event for a test failure.
func describe(ev transport.Event) string {
	switch ev.Kind {
	case transport.EventMessage:
		m := ev.Message
		idx := "not a suite payload"
		if i, err := PayloadIndex(m.Payload); err == nil {
			idx = fmt.Sprintf("index %d", i)
		}
		return fmt.Sprintf("message %s seq %d (%s, %d bytes)", m.Stream, m.Seq, idx, len(m.Payload))
	case transport.EventGap:
		return ev.Gap.String()
	case transport.EventStreamStart:
		s := ev.Start
		return fmt.Sprintf("stream-start %s replaces %s first seq %d", s.Stream, s.Replaces, s.FirstSeq)
	case transport.EventStreamEnd:
		e := ev.End
		return fmt.Sprintf("stream-end %s last seq %d: %s", e.Stream, e.LastSeq, e.Reason)
	}
	return ev.Kind.String()
}

// summary counts the events of a log.
func summary(events []transport.Event) string {
	var msgs, gaps, starts, ends int
	var lost, compacted uint64
	for _, ev := range events {
		switch ev.Kind {
		case transport.EventMessage:
			msgs++
		case transport.EventGap:
			gaps++
			if ev.Gap.Lost() {
				lost += ev.Gap.Len()
			} else {
				compacted += ev.Gap.Len()
			}
		case transport.EventStreamStart:
			starts++
		case transport.EventStreamEnd:
			ends++
		}
	}
	return fmt.Sprintf("%d events: %d messages, %d gaps (%d sequence numbers lost, %d compacted), %d stream-starts, %d stream-ends",
		len(events), msgs, gaps, lost, compacted, starts, ends)
}
