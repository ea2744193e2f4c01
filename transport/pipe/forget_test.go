package pipe

import (
	"testing"

	"github.com/brokerless/brokerless/transport"
)

func endEv(s transport.StreamID, last uint64, why transport.EndReason) *transport.Event {
	return &transport.Event{Kind: transport.EventStreamEnd, End: transport.StreamEnd{Stream: s, LastSeq: last, Reason: why}}
}

// TestCoreForgetsEndedFeedStreams: a feed's sessions come and go for as
// long as a pipe runs (a publisher restarting, or anyone starting
// sessions on a group without a key): what the core keeps of each goes
// when it ends, so 10,000 sessions leave nothing behind; their messages
// are still written and acknowledged. A log's stream (a partition) is
// kept. A session that ended idle and comes back is not counted
// Unresumed.
func TestCoreForgetsEndedFeedStreams(t *testing.T) {
	c := newCore(t, 0)
	dst := transport.StreamID{Topic: "dest"}
	if _, err := c.Resume(tailOf(dst, feedA, 1, DefaultTailRecords)); err != nil {
		t.Fatal(err)
	}
	for i := range uint64(10_000) {
		s := transport.StreamID{Feed: 9, Session: 100 + i}
		tk, ws := feed(t, c, startEv(s, 1), msg(s, 1), msg(s, 2), endEv(s, 2, transport.EndReplaced))
		if len(ws) != 2 {
			t.Fatalf("session %d: wrote %d, want 2", i, len(ws))
		}
		for _, k := range tk {
			if err := c.Done(k); err != nil {
				t.Fatal(err)
			}
		}
		if got := acks(c); len(got) != 1 || got[0] != (Ack{s, 2}) {
			t.Fatalf("session %d: acks %v", i, got)
		}
	}
	feed(t, c, msg(part0, 5), endEv(part0, 5, transport.EndClosed), msg(feedA, 3000), endEv(feedA, 3000, transport.EndIdle))
	if len(c.own) != 1 || !c.own[part0] || len(c.resumed) != 0 {
		t.Errorf("after 10,000 ended sessions: %d own streams, %d resumed; want part0 alone", len(c.own), len(c.resumed))
	}
	// feedA ended idle and comes back past its first position: not
	// counted, as part0 was (a log's stream the full tail did not reach).
	feed(t, c, startEv(feedA, 3001), msg(feedA, 3001))
	if s := c.Stats(); s.Unresumed != 1 || s.Forwarded != 20_000+3 {
		t.Errorf("stats %+v: want 1 unresumed (part0), every message forwarded", s)
	}
}
