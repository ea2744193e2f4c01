package pipe

import (
	"slices"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestEndBecomesMarker: a feed stream its publisher closed is written
// as an end marker at its LastSeq and counted; it acknowledges nothing
// (its LastSeq was, by the message at it);
// an end the subscriber only guessed (silence, a new session) and a
// log's stream's end are not written.
func TestEndBecomesMarker(t *testing.T) {
	c := newCore(t, 0)
	tk, ws := feed(t, c, startEv(feedA, 1), msg(feedA, 1), msg(feedA, 2), endEv(feedA, 2, transport.EndClosed))
	want := transport.StreamEnd{Stream: feedA, LastSeq: 2, Reason: transport.EndClosed}
	if len(ws) != 3 || !ws[2].ended || ws[2].end != want || ws[0].ended || ws[0].marker {
		t.Fatalf("wrote %+v, want 1, 2 and the end marker %+v", ws, want)
	}
	for _, k := range tk[:2] {
		if err := c.Done(k); err != nil {
			t.Fatal(err)
		}
	}
	if got := acks(c); !slices.Equal(got, []Ack{{feedA, 2}}) {
		t.Errorf("acks %v", got)
	}
	// The marker at 2 acknowledges nothing: 2 was, once.
	if err := c.Done(tk[2]); err != nil {
		t.Fatal(err)
	}
	if got := acks(c); len(got) != 0 {
		t.Errorf("the end marker's acceptance acknowledged %v again", got)
	}
	if s := c.Stats(); s.EndMarkers != 1 || s.Forwarded != 2 || s.Markers != 0 {
		t.Errorf("stats %+v", s)
	}
	for name, ev := range map[string]*transport.Event{
		"idle":     endEv(feedB, 3, transport.EndIdle),
		"replaced": endEv(feedB, 3, transport.EndReplaced),
		"a log's":  endEv(part0, 3, transport.EndClosed),
		"reason 0": endEv(feedB, 3, 0),
	} {
		c := newCore(t, 0)
		if _, ws := feed(t, c, ev); len(ws) != 0 {
			t.Errorf("%s: wrote %+v, want nothing", name, ws)
		}
	}
}

// TestResumeEndMarkerOnce: a pipe restarted after it wrote a session's
// end marker (the source gives it the session again, its window and its
// end) writes neither the session's messages nor its end again; one
// restarted after it wrote the last message but not the end marker
// writes the marker alone. The marker's position is not taken for a
// message's: nothing after the session's last message is marked lost.
func TestResumeEndMarkerOnce(t *testing.T) {
	run := func(c *Core, evs ...*transport.Event) []transport.Message {
		var dest []transport.Message
		for _, ev := range evs {
			for _, w := range c.Event(ev, clock) {
				m := w.Message
				m.Headers = slices.Clone(m.Headers)
				for i := range m.Headers {
					m.Headers[i].Value = slices.Clone(m.Headers[i].Value)
				}
				m.Stream, m.Seq = part0, uint64(len(dest))
				dest = append(dest, m)
			}
		}
		return dest
	}
	session := []*transport.Event{startEv(feedA, 1), msg(feedA, 1), msg(feedA, 2), msg(feedA, 3), endEv(feedA, 3, transport.EndClosed)}
	dest := run(newCore(t, 0), session...)
	if len(dest) != 4 {
		t.Fatalf("first run wrote %d records, want 3 messages and an end marker", len(dest))
	}
	c := newCore(t, 0)
	if _, err := c.Resume(dest); err != nil {
		t.Fatal(err)
	}
	next := append(slices.Clone(session), startEv(feedB, 1), msg(feedB, 1))
	if _, ws := feed(t, c, next...); len(ws) != 1 || ws[0].ended || ws[0].marker || ws[0].origin.Stream != feedB {
		t.Errorf("restarted after the end marker, wrote %+v; want feedB's 1 alone", ws)
	}
	if s := c.Stats(); s.EndMarkers != 0 || s.Markers != 0 || s.Skipped != 4 {
		t.Errorf("stats %+v: want the 3 messages and the end skipped", s)
	}

	// Killed before the end marker: it is written on restart, once.
	c = newCore(t, 0)
	if _, err := c.Resume(dest[:3]); err != nil {
		t.Fatal(err)
	}
	if _, ws := feed(t, c, session...); len(ws) != 1 || !ws[0].ended || ws[0].end.LastSeq != 3 {
		t.Errorf("restarted before the end marker, wrote %+v; want the end marker alone", ws)
	}
}
