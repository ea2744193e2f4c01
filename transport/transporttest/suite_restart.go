package transporttest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// probeIdle is how long the Restart test waits for the new session before
// publishing another message to it: a subscriber may need a message or
// two to notice a restarted publisher (a reconnect, a join).
const probeIdle = 20 * time.Millisecond

// testRestart publishes on one publisher, closes it and publishes on a
// new one of the same feed: the new stream must have the same feed and
// another session, never be mixed with the old one, and its stream-start
// (if the transport reports them) must name the old stream in Replaces.
// A log's stream (named by topic and partition) has no sessions: there
// the new publisher's messages must continue the same stream.
func testRestart(t *testing.T, h Harness) {
	p := newPair(t, h, Faults{})
	if p.NewPublisher == nil {
		t.Skip("harness has no NewPublisher")
	}
	batch := max(h.messages()/10, 4)
	r := newRecorder(t, h, p.Sub)
	done := publishAsync(t, p.pub, 0, batch, bulkSize)
	r.collect(done, r.idle, waitFor(h.ContiguousSeq, batch-1))
	awaitPublished(t, done)
	old := oneStream(t, r.events)
	if old.IsZero() {
		t.Fatal("no message of the first publisher delivered")
	}
	p.closePub(p.pub)

	pub := p.newPublisher()
	next := probeRestart(t, r, pub, batch)
	done = publishAsync(t, pub, next, next+batch, bulkSize)
	r.collect(done, r.idle, waitFor(h.ContiguousSeq, next+batch-1))
	awaitPublished(t, done)

	n := next + batch
	checkRestart(t, r.events, old, batch)
	checkLog(t, h, p.sem, r.events, n, bulkSize, false)
}

// probeRestart publishes messages from index next on the restarted pub,
// one per probeIdle, until one of them is delivered, and returns the
// index after the last one published.
func probeRestart(t *testing.T, r *recorder, pub transport.Publisher, next int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), receiveDeadline)
	defer cancel()
	first := next
	fromNew := func(ev transport.Event) bool {
		idx, err := PayloadIndex(ev.Message.Payload)
		return ev.Kind == transport.EventMessage && err == nil && idx >= first
	}
	for ; ctx.Err() == nil; next++ {
		if err := publishRange(ctx, pub, next, next+1, bulkSize); err != nil {
			t.Fatalf("restarted publisher: %v", err)
		}
		if r.collect(closedChan, probeIdle, fromNew) {
			return next + 1
		}
	}
	t.Fatalf("nothing from the restarted publisher delivered in %v (%d messages published)", receiveDeadline, next-first)
	return next
}

// checkRestart checks the handover from stream old (messages below
// batch) to the restarted one (the rest), or, when old is a log's
// stream, that the restarted publisher's messages continue it.
func checkRestart(t *testing.T, events []transport.Event, old transport.StreamID, batch int) {
	t.Helper()
	if old.Topic != "" {
		checkLogRestart(t, events, old, batch)
		return
	}
	var (
		cur      transport.StreamID
		oldStart bool
		newStart = -1
	)
	for i, ev := range events {
		switch ev.Kind {
		case transport.EventStreamStart:
			if ev.Start.Stream == old {
				oldStart = true
			} else if newStart < 0 {
				newStart = i
				if ev.Start.Replaces != old {
					report(t, events, &Violation{Check: "restart", Event: i,
						Reason: fmt.Sprintf("new stream %s names %s in Replaces, not %s", ev.Start.Stream, ev.Start.Replaces, old)})
				}
			}
		case transport.EventMessage:
			m := ev.Message
			idx, err := PayloadIndex(m.Payload)
			if err != nil {
				continue
			}
			if reason := handover(m.Stream, idx, old, cur, batch); reason != "" {
				report(t, events, &Violation{Check: "restart", Event: i, Reason: reason})
				return
			}
			if idx >= batch && cur.IsZero() {
				cur = m.Stream
				if oldStart && newStart < 0 {
					report(t, events, &Violation{Check: "restart", Event: i,
						Reason: fmt.Sprintf("the old stream had a stream-start, the new stream %s none before its first message", cur)})
				}
			}
		}
	}
	if cur.IsZero() {
		t.Error("no message of the restarted publisher delivered")
	}
}

// checkLogRestart checks that every message, the restarted publisher's
// (index batch and above) too, came from the log's stream old: a
// partition is one stream for its whole life. CheckAccounting rejects a
// stream-start that replaces it.
func checkLogRestart(t *testing.T, events []transport.Event, old transport.StreamID, batch int) {
	t.Helper()
	restarted := false
	for i, ev := range events {
		if ev.Kind != transport.EventMessage {
			continue
		}
		idx, err := PayloadIndex(ev.Message.Payload)
		if err != nil {
			continue
		}
		if id := ev.Message.Stream; id != old {
			report(t, events, &Violation{Check: "restart", Event: i,
				Reason: fmt.Sprintf("message %d came from stream %s, not %s: a log's partition is one stream for its whole life", idx, id, old)})
			return
		}
		restarted = restarted || idx >= batch
	}
	if !restarted {
		t.Error("no message of the restarted publisher delivered")
	}
}

// handover says what is wrong with a message of stream id and index idx,
// given the old stream, the new one (zero until its first message) and
// the first index the new publisher published.
func handover(id transport.StreamID, idx int, old, cur transport.StreamID, batch int) string {
	switch {
	case idx < batch && id != old:
		return fmt.Sprintf("message %d of the first publisher came from stream %s, not %s", idx, id, old)
	case idx < batch && !cur.IsZero():
		return fmt.Sprintf("message %d of the old stream %s delivered after the new stream %s started", idx, old, cur)
	case idx >= batch && id.Session == old.Session:
		return fmt.Sprintf("restarted publisher kept the session of %s", old)
	case idx >= batch && id.Feed != old.Feed:
		return fmt.Sprintf("restarted publisher moved from feed %d to feed %d", old.Feed, id.Feed)
	case idx >= batch && !cur.IsZero() && id != cur:
		return fmt.Sprintf("restarted publisher's messages came from %s and %s", cur, id)
	}
	return ""
}
