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

// TestCoreKeepsResumeOfStreamEndedIdle: a feed's session the pipe
// resumed (the destination held it up to 100) replays its window from 1
// after the restart, and goes silent at 40 (EndIdle, 41..60 reported
// lost as it ends). Its publisher is heard again and the session takes
// up at 61 (package reliable resumes a session ended for silence): 61..100
// are in the destination already, and are not written again; 101 on are.
func TestCoreKeepsResumeOfStreamEndedIdle(t *testing.T) {
	c := newCore(t, 0)
	if _, err := c.Resume(tailOf(part0, feedA, 1, 100, tailOf(part0, feedB, 1, 50)...)); err != nil {
		t.Fatal(err)
	}
	evs := []*transport.Event{startEv(feedA, 1)}
	for s := uint64(1); s <= 40; s++ {
		evs = append(evs, msg(feedA, s))
	}
	evs = append(evs, gapEv(feedA, 41, 60, transport.GapStreamEnded), endEv(feedA, 60, transport.EndIdle), startEv(feedA, 61))
	for s := uint64(61); s <= 120; s++ {
		evs = append(evs, msg(feedA, s))
	}
	_, ws := feed(t, c, evs...)
	if len(ws) != 20 || ws[0].marker || ws[0].origin.Seq != 101 {
		t.Errorf("wrote %d (%+v), want 101..120 alone", len(ws), ws)
	}
	// A session that ended past what the destination held, or for good
	// (feedB, closed at 1 of the 50 held), leaves nothing behind.
	feed(t, c, endEv(feedA, 120, transport.EndIdle), startEv(feedB, 1), msg(feedB, 1), endEv(feedB, 1, transport.EndClosed))
	if len(c.own) != 0 || len(c.resumed) != 0 {
		t.Errorf("%d own streams, %d resumed: want none", len(c.own), len(c.resumed))
	}
}

// TestEndedIdleRemembered: a feed's session that ended idle comes back
// (package reliable resumes it) after more sessions than a pipe used to
// remember (64) ended, most of them for good (closed or replaced,
// which never come back, and are not remembered): it is not counted
// Unresumed. Sessions that ended idle and were pushed out of what the
// core remembers are counted (Stats.EndedForgotten).
func TestEndedIdleRemembered(t *testing.T) {
	c := newCore(t, 0)
	dst := transport.StreamID{Topic: "dest"}
	if _, err := c.Resume(tailOf(dst, feedA, 1, DefaultTailRecords)); err != nil {
		t.Fatal(err)
	}
	back := transport.StreamID{Feed: 7, Session: 1}
	feed(t, c, startEv(back, 1), msg(back, 1), endEv(back, 1, transport.EndIdle))
	for i := range uint64(200) {
		s := transport.StreamID{Feed: 9, Session: 100 + i}
		why := transport.EndClosed
		if i%4 == 0 {
			why = transport.EndIdle
		}
		feed(t, c, startEv(s, 1), msg(s, 1), endEv(s, 1, why))
	}
	feed(t, c, startEv(back, 2), msg(back, 2))
	if s := c.Stats(); s.Unresumed != 0 || s.EndedForgotten != 0 {
		t.Errorf("stats %+v: want nothing unresumed, nothing forgotten", s)
	}
	for i := range uint64(endedKeep) {
		s := transport.StreamID{Feed: 8, Session: 100 + i}
		feed(t, c, startEv(s, 1), msg(s, 1), endEv(s, 1, transport.EndIdle))
	}
	if s := c.Stats(); s.EndedForgotten != 51 {
		t.Errorf("forgot %d sessions that ended idle, want 51", s.EndedForgotten)
	}
}
