package zmq

import (
	"fmt"
	"slices"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// events formats evs one per string, for comparison.
func events(evs []transport.Event) []string {
	var out []string
	for _, ev := range evs {
		switch ev.Kind {
		case transport.EventStreamStart:
			out = append(out, fmt.Sprintf("start %x replaces %x", ev.Start.Stream.Session, ev.Start.Replaces.Session))
		case transport.EventStreamEnd:
			out = append(out, fmt.Sprintf("end %x at %d %s", ev.End.Stream.Session, ev.End.LastSeq, ev.End.Reason))
		case transport.EventGap:
			out = append(out, fmt.Sprintf("gap %x %d..%d", ev.Gap.Stream.Session, ev.Gap.From, ev.Gap.To))
		}
	}
	return out
}

// TestTrackerReplacesOnlyWhatIsOver: sessions of one feed and topic
// sending at once, on one connection or several, are all delivered; a
// new session replaces only a stream that ended or whose connection
// closed before it came, and the replaced stream's end is reported.
func TestTrackerReplacesOnlyWhatIsOver(t *testing.T) {
	tr := newTracker(16, 1<<20)
	topic := []byte("t")
	id := func(session uint64) transport.StreamID { return transport.StreamID{Feed: 7, Session: session} }
	step := func(what string, want ...string) func(evs []transport.Event) {
		return func(evs []transport.Event) {
			t.Helper()
			if got := events(evs); !slices.Equal(got, want) {
				t.Fatalf("%s: events %q, want %q", what, got, want)
			}
		}
	}
	deliver := func(session, conn, seq uint64) []transport.Event {
		t.Helper()
		from, ok, evs := tr.data(id(session), topic, conn, seq, seq, nil)
		if !ok || from != seq {
			t.Fatalf("session %x seq %d on connection %d not delivered", session, seq, conn)
		}
		return evs
	}
	// a and b on connections 1 and 2, c on connection 2 too (a proxy):
	// interleaved, all delivered.
	step("a starts", "start a replaces 0")(deliver(0xa, 1, 1))
	step("b starts beside a", "start b replaces 0")(deliver(0xb, 2, 1))
	step("c starts beside b on its connection", "start c replaces 0")(deliver(0xc, 2, 5))
	for seq := uint64(2); seq <= 4; seq++ {
		step("a goes on")(deliver(0xa, 1, seq))
		step("b goes on")(deliver(0xb, 2, seq))
		step("c goes on")(deliver(0xc, 2, seq+4))
	}
	// Connection 1 closes: a (on it) is over, but stays until a new
	// session takes over.
	step("connection 1 closes")(tr.disconnected(1, nil))
	step("a restarts as d on connection 3", "end a at 4 replaced by a new session", "start d replaces a")(deliver(0xd, 3, 1))
	// b ends: the next new session names it; c is still live.
	step("b ends", "end b at 4 closed by publisher")(tr.mark(id(0xb), topic, 2, 5, true, nil))
	step("e starts", "start e replaces b")(deliver(0xe, 2, 1))
	step("c goes on")(deliver(0xc, 2, 9))
	step("d goes on")(deliver(0xd, 3, 2))
	if tr.late != 0 || tr.duplicates != 0 {
		t.Fatalf("late %d, duplicates %d", tr.late, tr.duplicates)
	}
	// A message of a replaced stream after all is late.
	if _, ok, _ := tr.data(id(0xa), topic, 1, 5, 5, nil); ok || tr.late != 1 {
		t.Fatalf("message of a replaced stream delivered (late %d)", tr.late)
	}
}

// TestTrackerPlainConnections: publishers without header frames (feed
// 0), one stream per connection, never replace one another; a
// connection's stream ends with it.
func TestTrackerPlainConnections(t *testing.T) {
	tr := newTracker(16, 1<<20)
	a, b := transport.StreamID{Session: 0xa}, transport.StreamID{Session: 0xb}
	for seq := uint64(1); seq <= 3; seq++ {
		for conn, id := range map[uint64]transport.StreamID{1: a, 2: b} {
			if _, ok, evs := tr.data(id, []byte("t"), conn, seq, seq, nil); !ok || len(evs) > 1 || len(evs) == 1 && (seq != 1 || !evs[0].Start.Replaces.IsZero()) {
				t.Fatalf("connection %d seq %d: delivered %v, events %q", conn, seq, ok, events(evs))
			}
		}
	}
	if got, want := events(tr.disconnected(1, nil)), []string{"end a at 3 closed by publisher"}; !slices.Equal(got, want) {
		t.Fatalf("connection 1 closed: events %q, want %q", got, want)
	}
	if _, ok, _ := tr.data(b, []byte("t"), 2, 4, 4, nil); !ok {
		t.Fatal("connection 2's stream stopped with connection 1's")
	}
}

// TestTrackerBoundedInBytes: streams of long topics are forgotten,
// least recently seen first, once they cost more than the byte bound,
// well before the bound in streams.
func TestTrackerBoundedInBytes(t *testing.T) {
	topic := make([]byte, 10_000)
	tr := newTracker(1000, 3*(streamCost+len(topic)))
	for s := uint64(1); s <= 5; s++ {
		topic[0] = byte(s)
		tr.data(transport.StreamID{Feed: 1, Session: s}, topic, 1, 1, 1, nil)
	}
	if len(tr.streams) != 3 || tr.evicted != 2 || tr.bytes != 3*(streamCost+len(topic)) {
		t.Fatalf("%d streams (%d bytes), %d evicted; want 3 streams, 2 evicted", len(tr.streams), tr.bytes, tr.evicted)
	}
	for s := uint64(3); s <= 5; s++ {
		if tr.streams[transport.StreamID{Feed: 1, Session: s}] == nil {
			t.Fatalf("stream %d forgotten; want the two oldest forgotten", s)
		}
	}
}
