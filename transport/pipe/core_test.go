package pipe

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

var (
	feedA = transport.StreamID{Feed: 1, Session: 0xa}
	feedB = transport.StreamID{Feed: 1, Session: 0xb}
	part0 = transport.StreamID{Topic: "t", Partition: 0}
	part1 = transport.StreamID{Topic: "t", Partition: 1}
	t0    = time.Unix(1700000000, 0)
)

func clock() time.Time { return t0 }

func msg(s transport.StreamID, seq uint64) *transport.Event {
	return &transport.Event{Kind: transport.EventMessage, Message: transport.Message{
		Stream: s, Seq: seq, Time: t0.Add(time.Duration(seq)), Payload: []byte("p"),
	}}
}

func gapEv(s transport.StreamID, from, to uint64, why transport.GapReason) *transport.Event {
	return &transport.Event{Kind: transport.EventGap, Gap: transport.Gap{Stream: s, From: from, To: to, Reason: why}}
}

func startEv(s transport.StreamID, first uint64) *transport.Event {
	return &transport.Event{Kind: transport.EventStreamStart, Start: transport.StreamStart{Stream: s, FirstSeq: first}}
}

func newCore(t *testing.T, max int) *Core {
	t.Helper()
	return newCoreBytes(t, max, 0)
}

// written is what a destination holds, read back: a gap marker as its
// Gap, an end marker as its StreamEnd, a message as its origin.
type written struct {
	gap    transport.Gap
	origin transport.Origin
	marker bool
	end    transport.StreamEnd
	ended  bool // an end marker
}

func readBack(t *testing.T, m transport.Message) written {
	t.Helper()
	if g, ok, err := transport.ParseGapMarker(m); err != nil || ok {
		if err != nil {
			t.Fatal(err)
		}
		return written{gap: g, marker: true}
	}
	if e, ok, err := transport.ParseEndMarker(m); err != nil || ok {
		if err != nil {
			t.Fatal(err)
		}
		return written{end: e, ended: true}
	}
	o, ok, err := transport.ParseOrigin(m.Headers)
	if err != nil || !ok {
		t.Fatalf("no origin in %+v: %v", m.Headers, err)
	}
	return written{origin: o}
}

// feed passes events to c and returns the tickets of the writes and what
// they read back as.
func feed(t *testing.T, c *Core, evs ...*transport.Event) ([]uint64, []written) {
	t.Helper()
	var tickets []uint64
	var ws []written
	for _, ev := range evs {
		if c.Full() {
			t.Fatalf("full before %+v", ev)
		}
		for _, w := range c.Event(ev, clock) {
			tickets = append(tickets, w.Ticket)
			ws = append(ws, readBack(t, w.Message))
		}
	}
	return tickets, ws
}

func acks(c *Core) []Ack {
	a := c.TakeAcks(nil)
	slices.SortFunc(a, func(x, y Ack) int { return strings.Compare(x.Stream.String(), y.Stream.String()) })
	return a
}

func TestForwardKeepsMessageAddsOrigin(t *testing.T) {
	c := newCore(t, 0)
	ev := &transport.Event{Kind: transport.EventMessage, Message: transport.Message{
		Stream: feedA, Seq: 42, Time: t0, Topic: "AAPL", Key: []byte("k"),
		Headers: []transport.Header{{Key: "app", Value: []byte("v")}}, Payload: []byte("bid=1"),
	}}
	ws := c.Event(ev, clock)
	if len(ws) != 1 {
		t.Fatalf("%d writes", len(ws))
	}
	m := ws[0].Message
	if m.Topic != "" || string(m.Key) != "k" || string(m.Payload) != "bid=1" || !m.Time.Equal(t0) ||
		m.Headers[0].Key != "app" || string(m.Headers[0].Value) != "v" {
		t.Errorf("forwarded %+v", m)
	}
	o, ok, err := transport.ParseOrigin(m.Headers)
	if err != nil || !ok || o.Stream != feedA || o.Seq != 42 || !o.Time.Equal(t0) || o.Topic != "AAPL" {
		t.Errorf("origin %+v %v %v", o, ok, err)
	}
	want := transport.AppendOrigin([]transport.Header{{Key: "app", Value: []byte("v")}}, transport.Origin{Stream: feedA, Seq: 42, Time: t0, Topic: "AAPL"})
	if !slices.EqualFunc(m.Headers, want, func(a, b transport.Header) bool { return a.Key == b.Key && string(a.Value) == string(b.Value) }) {
		t.Errorf("headers %q, want %q (as AppendOrigin writes them)", m.Headers, want)
	}
	// Without a topic there is no topic header.
	ws = c.Event(msg(feedA, 43), clock)
	if o, _, _ := transport.ParseOrigin(ws[0].Message.Headers); o.Topic != "" || o.Seq != 43 {
		t.Errorf("origin %+v", o)
	}
}

func TestForwardAllocations(t *testing.T) {
	c := newCore(t, 4)
	ev := msg(feedA, 1)
	ev.Message.Topic = "AAPL"
	var buf []Ack
	allocs := testing.AllocsPerRun(1000, func() {
		ev.Message.Seq++
		for _, w := range c.Event(ev, clock) {
			if err := c.Done(w.Ticket); err != nil {
				t.Fatal(err)
			}
		}
		buf = c.TakeAcks(buf[:0])
	})
	if allocs > 0 {
		t.Errorf("%.1f allocations per message", allocs)
	}
}

// TestAcksInOrder: the source is acknowledged cumulatively, and only up
// to the last message before which every write was accepted, whatever
// order the receipts come in.
func TestAcksInOrder(t *testing.T) {
	c := newCore(t, 0)
	tk, _ := feed(t, c, startEv(feedA, 1), msg(feedA, 1), msg(feedB, 7), msg(feedA, 2), msg(feedA, 3))
	if len(tk) != 4 {
		t.Fatalf("%d writes", len(tk))
	}
	for _, step := range []struct {
		done uint64
		want []Ack
	}{
		{tk[3], nil},
		{tk[1], nil},
		{tk[0], []Ack{{feedA, 1}, {feedB, 7}}},
		{tk[2], []Ack{{feedA, 3}}},
	} {
		if err := c.Done(step.done); err != nil {
			t.Fatal(err)
		}
		if got := acks(c); !slices.Equal(got, step.want) {
			t.Errorf("after ticket %d: acks %v, want %v", step.done, got, step.want)
		}
	}
	if c.InFlight() != 0 || c.Stats().Accepted != 4 || c.Stats().Forwarded != 4 {
		t.Errorf("stats %+v", c.Stats())
	}
	if err := c.Done(tk[0]); !errors.Is(err, ErrBadTicket) {
		t.Errorf("done twice: %v", err)
	}
	if err := c.Done(99); !errors.Is(err, ErrBadTicket) {
		t.Errorf("unknown ticket: %v", err)
	}
}

// TestGapOfAnotherStream: a gap of a stream the source neither started
// nor delivered a message of (a log delivers a gap marker as the gap of
// the stream it stands for) is written, and not acknowledged: the source
// has nothing to acknowledge for it.
func TestGapOfAnotherStream(t *testing.T) {
	c := newCore(t, 0)
	tk, ws := feed(t, c, startEv(part0, 1), msg(part0, 1), gapEv(feedA, 5, 9, transport.GapSourceDown), msg(part0, 3))
	if len(ws) != 3 || !ws[1].marker || ws[1].gap.Stream != feedA {
		t.Fatalf("wrote %+v", ws)
	}
	for _, k := range tk {
		if err := c.Done(k); err != nil {
			t.Fatal(err)
		}
	}
	if got := acks(c); !slices.Equal(got, []Ack{{part0, 3}}) {
		t.Errorf("acks %v, want only part0's", got)
	}
}

// TestFullAtMaxInFlightBytes: the pipe takes no more events once those
// in flight hold MaxInFlightBytes (the event that reaches it is taken),
// and takes them again once receipts retire enough; a skipped event
// holds nothing.
func TestFullAtMaxInFlightBytes(t *testing.T) {
	big := func(seq uint64, n int) *transport.Event {
		ev := msg(part0, seq)
		ev.Message.Payload = make([]byte, n)
		return ev
	}
	first := newCoreBytes(t, 100, 0)
	feed(t, first, big(1, 1000))
	size := first.Stats().InFlightBytes // the payload and the origin headers
	if size < 1000 {
		t.Fatalf("in flight %d bytes, want at least the payload's 1000", size)
	}
	c := newCoreBytes(t, 100, 2*size)
	tk, _ := feed(t, c, big(1, 1000))
	if c.Full() {
		t.Fatal("full at half its bytes")
	}
	tk2, _ := feed(t, c, big(2, 1000))
	tk = append(tk, tk2...)
	if !c.Full() || c.Stats().InFlightBytes != 2*size {
		t.Fatalf("full %v with %d bytes in flight, want full at %d", c.Full(), c.Stats().InFlightBytes, 2*size)
	}
	if err := c.Done(tk[1]); err != nil || !c.Full() {
		t.Fatalf("a receipt out of order frees nothing: full %v, %v", c.Full(), err)
	}
	if err := c.Done(tk[0]); err != nil || c.Full() || c.Stats().InFlightBytes != 0 {
		t.Fatalf("full %v, %d bytes in flight, %v", c.Full(), c.Stats().InFlightBytes, err)
	}
}

// newCoreBytes is NewCore, failing t on an error.
func newCoreBytes(t *testing.T, max, maxBytes int) *Core {
	t.Helper()
	c, err := NewCore(max, maxBytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFullAtMaxInFlight(t *testing.T) {
	c := newCore(t, 3)
	tk, _ := feed(t, c, msg(feedA, 1), msg(feedA, 2), msg(feedA, 3))
	if !c.Full() || c.InFlight() != 3 {
		t.Fatalf("full %v in flight %d", c.Full(), c.InFlight())
	}
	if err := c.Done(tk[1]); err != nil || !c.Full() {
		t.Fatalf("a receipt out of order frees nothing: full %v, %v", c.Full(), err)
	}
	if err := c.Done(tk[0]); err != nil || c.Full() || c.InFlight() != 1 {
		t.Fatalf("full %v in flight %d, %v", c.Full(), c.InFlight(), err)
	}
	if _, err := NewCore(-1, 0); !errors.Is(err, ErrBadConfig) {
		t.Errorf("NewCore(-1, 0): %v", err)
	}
	if _, err := NewCore(0, -1); !errors.Is(err, ErrBadConfig) {
		t.Errorf("NewCore(0, -1): %v", err)
	}
}

// TestGapBecomesMarker: a gap of the source is written as a gap marker
// with its range and reason, and acknowledged at its end.
func TestGapBecomesMarker(t *testing.T) {
	c := newCore(t, 0)
	tk, ws := feed(t, c, msg(part0, 4), gapEv(part0, 5, 9, transport.GapRetention), msg(part0, 10))
	if len(ws) != 3 || !ws[1].marker || ws[1].gap != (transport.Gap{Stream: part0, From: 5, To: 9, Reason: transport.GapRetention}) {
		t.Fatalf("wrote %+v", ws)
	}
	if err := c.Done(tk[0]); err != nil {
		t.Fatal(err)
	}
	if err := c.Done(tk[1]); err != nil {
		t.Fatal(err)
	}
	if got := acks(c); !slices.Equal(got, []Ack{{part0, 9}}) {
		t.Errorf("acks %v", got)
	}
	if s := c.Stats(); s.Markers != 1 || s.Marked != 5 || s.Forwarded != 2 || s.ResumeGaps != 0 {
		t.Errorf("stats %+v", s)
	}
}

// tailOf is a destination's tail as a previous run of the pipe left it
// in stream dest: messages from..to of src, then the given extra records.
func tailOf(dest, src transport.StreamID, from, to uint64, extra ...transport.Message) []transport.Message {
	var tail []transport.Message
	for s := from; s <= to; s++ {
		m := transport.Message{Stream: dest, Seq: uint64(len(tail)), Headers: transport.AppendOrigin(nil, transport.Origin{Stream: src, Seq: s, Time: t0})}
		tail = append(tail, m)
	}
	for _, m := range extra {
		m.Stream = dest
		tail = append(tail, m)
	}
	return tail
}

// TestResumeDropsWhatIsWritten: after a restart, the source's window
// replays messages the destination holds; they are dropped (and still
// acknowledged in order), and the first one missing is written.
func TestResumeDropsWhatIsWritten(t *testing.T) {
	c := newCore(t, 0)
	foreign := transport.Message{Payload: []byte("written by someone else")}
	if n, err := c.Resume(tailOf(part0, feedA, 90, 100, foreign)); n != 1 || err != nil {
		t.Fatalf("resume: %d streams, %v", n, err)
	}
	evs := []*transport.Event{startEv(feedA, 95)}
	for s := uint64(95); s <= 102; s++ {
		evs = append(evs, msg(feedA, s))
	}
	tk, ws := feed(t, c, evs...)
	if len(ws) != 2 || ws[0].origin.Seq != 101 || ws[1].origin.Seq != 102 {
		t.Fatalf("wrote %+v", ws)
	}
	if got := acks(c); !slices.Equal(got, []Ack{{feedA, 100}}) {
		t.Errorf("acks before receipts %v", got)
	}
	for _, k := range tk {
		if err := c.Done(k); err != nil {
			t.Fatal(err)
		}
	}
	if got := acks(c); !slices.Equal(got, []Ack{{feedA, 102}}) {
		t.Errorf("acks %v", got)
	}
	if s := c.Stats(); s.Skipped != 6 || s.Markers != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestResumeMarksWhatTheSourceLost: when the source's first message
// after a restart is past the one after the last written, a gap marker
// covers exactly the positions between, with reason GapSourceDown, and
// with them what the source reports lost right after, out of its window
// before the pipe could get it back.
func TestResumeMarksWhatTheSourceLost(t *testing.T) {
	down := func(from, to uint64) written {
		return written{marker: true, gap: transport.Gap{Stream: feedA, From: from, To: to, Reason: transport.GapSourceDown}}
	}
	data := func(seq uint64) written { return written{origin: transport.Origin{Stream: feedA, Seq: seq}} }
	end := &transport.Event{Kind: transport.EventStreamEnd, End: transport.StreamEnd{Stream: feedA, LastSeq: 149, Reason: transport.EndIdle}}
	for _, c := range []struct {
		name string
		evs  []*transport.Event
		want []written
	}{
		{"stream start", []*transport.Event{startEv(feedA, 150), msg(feedA, 150)}, []written{down(101, 149), data(150)}},
		{"first message", []*transport.Event{msg(feedA, 150)}, []written{down(101, 149), data(150)}},
		{"then the window's loss", []*transport.Event{startEv(feedA, 120), gapEv(feedA, 120, 160, transport.GapUnrecoverable), msg(feedA, 161)},
			[]written{down(101, 160), data(161)}},
		{"then another loss", []*transport.Event{startEv(feedA, 120), gapEv(feedA, 120, 160, transport.GapTimeout), msg(feedA, 161)},
			[]written{down(101, 119), {marker: true, gap: transport.Gap{Stream: feedA, From: 120, To: 160, Reason: transport.GapTimeout}}, data(161)}},
		{"joined at the window's edge", []*transport.Event{startEv(feedA, 1), gapEv(feedA, 1, 160, transport.GapUnrecoverable), gapEv(feedA, 161, 170, transport.GapOutpaced), msg(feedA, 171)},
			[]written{down(101, 170), data(171)}},
		{"window's edge held", []*transport.Event{startEv(feedA, 1), gapEv(feedA, 1, 80, transport.GapUnrecoverable), msg(feedA, 81), msg(feedA, 101)}, []written{data(101)}},
		{"then the end", []*transport.Event{startEv(feedA, 150), end}, []written{down(101, 149)}},
		{"next message", []*transport.Event{msg(feedA, 101)}, []written{data(101)}},
		{"gap overlapping", []*transport.Event{gapEv(feedA, 90, 110, transport.GapTimeout)}, []written{
			{marker: true, gap: transport.Gap{Stream: feedA, From: 101, To: 110, Reason: transport.GapTimeout}},
		}},
		{"gap held", []*transport.Event{gapEv(feedA, 90, 100, transport.GapUnrecoverable)}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			core := newCore(t, 0)
			if _, err := core.Resume(tailOf(part0, feedA, 1, 100)); err != nil {
				t.Fatal(err)
			}
			_, ws := feed(t, core, append(c.evs, msg(feedB, 1))...)
			want := append(c.want, written{origin: transport.Origin{Stream: feedB, Seq: 1}})
			if len(ws) != len(want) {
				t.Fatalf("wrote %+v, want %+v", ws, want)
			}
			for i := range ws {
				if ws[i].marker != want[i].marker || ws[i].gap != want[i].gap || ws[i].origin.Seq != want[i].origin.Seq || ws[i].origin.Stream != want[i].origin.Stream {
					t.Errorf("write %d: %+v, want %+v", i, ws[i], want[i])
				}
			}
			// Only the first event of the stream is compared.
			if _, ws := feed(t, core, msg(feedA, 500)); len(ws) != 1 || ws[0].marker {
				t.Errorf("later message wrote %+v", ws)
			}
		})
	}
}

// TestResumeFromMarker: a gap marker in the tail counts up to its end.
func TestResumeFromMarker(t *testing.T) {
	c := newCore(t, 0)
	marker := transport.GapMarker(transport.Gap{Stream: feedA, From: 101, To: 180, Reason: transport.GapSourceDown}, t0)
	if _, err := c.Resume(tailOf(part0, feedA, 99, 100, marker)); err != nil {
		t.Fatal(err)
	}
	if _, ws := feed(t, c, startEv(feedA, 170), msg(feedA, 180), msg(feedA, 181)); len(ws) != 1 || ws[0].origin.Seq != 181 {
		t.Errorf("wrote %+v", ws)
	}
}

// TestResumeFromASCIITail: a recorder upgraded past the binary origin
// header resumes from what the version before wrote (ASCII origin
// headers and gap markers) as from its own records.
func TestResumeFromASCIITail(t *testing.T) {
	ascii := func(seq uint64, mark string) transport.Message {
		hs := []transport.Header{
			{Key: transport.HeaderOriginStream, Value: []byte(transport.FormatStreamID(feedA))},
			{Key: transport.HeaderOriginSeq, Value: fmt.Appendf(nil, "%d", seq)},
			{Key: transport.HeaderOriginTime, Value: []byte("1")},
		}
		if mark != "" {
			hs = append(hs, transport.Header{Key: transport.HeaderGap, Value: []byte(mark)})
		}
		return transport.Message{Headers: hs}
	}
	c := newCore(t, 0)
	if _, err := c.Resume(tailOf(part0, feedA, 1, 0, ascii(99, ""), ascii(100, ""), ascii(101, fmt.Sprintf("101-180 %d", transport.GapSourceDown)))); err != nil {
		t.Fatal(err)
	}
	if _, ws := feed(t, c, startEv(feedA, 170), msg(feedA, 180), msg(feedA, 181)); len(ws) != 1 || ws[0].origin.Seq != 181 {
		t.Errorf("wrote %+v", ws)
	}
	c = newCore(t, 0)
	if _, err := c.Resume(tailOf(part0, feedA, 1, 0, ascii(99, ""), ascii(100, ""))); err != nil {
		t.Fatal(err)
	}
	if _, ws := feed(t, c, startEv(feedA, 95), msg(feedA, 100), msg(feedA, 101)); len(ws) != 1 || ws[0].origin.Seq != 101 {
		t.Errorf("wrote %+v", ws)
	}
}

func TestResumeSplitStream(t *testing.T) {
	c := newCore(t, 0)
	tail := append(tailOf(part0, feedA, 1, 5), tailOf(part1, feedA, 6, 9)...)
	if _, err := c.Resume(tail); !errors.Is(err, ErrSplitStream) {
		t.Fatalf("resume: %v", err)
	}
	c = newCore(t, 0)
	tail = append(tailOf(part0, feedA, 1, 5), tailOf(part1, feedB, 6, 9)...)
	if n, err := c.Resume(tail); n != 2 || err != nil {
		t.Fatalf("two streams in two partitions: %d, %v", n, err)
	}
}

// TestResumeStreamsInterleaved: the Core remembers the lookups of the
// last stream; events of two streams taking turns, one resumed, each
// keep their own: the resumed one's messages and gap the destination
// held are dropped, the other's all written; and a Resume after events
// counts for the stream already seen.
func TestResumeStreamsInterleaved(t *testing.T) {
	c := newCore(t, 0)
	if _, err := c.Resume(tailOf(part0, feedA, 1, 10)); err != nil {
		t.Fatal(err)
	}
	_, ws := feed(t, c, msg(feedA, 9), msg(feedB, 9), gapEv(feedA, 10, 10, transport.GapUnrecoverable), msg(feedB, 10), msg(feedA, 11), msg(feedB, 11))
	var got []string
	for _, w := range ws {
		if w.marker {
			got = append(got, fmt.Sprintf("gap %x/%d-%d", w.gap.Stream.Session, w.gap.From, w.gap.To))
			continue
		}
		got = append(got, fmt.Sprintf("%x/%d", w.origin.Stream.Session, w.origin.Seq))
	}
	if want := []string{"b/9", "b/10", "a/11", "b/11"}; !slices.Equal(got, want) {
		t.Fatalf("wrote %v, want %v", got, want)
	}
	c = newCore(t, 0)
	feed(t, c, msg(feedB, 1))
	if _, err := c.Resume(tailOf(part0, feedB, 1, 10)); err != nil {
		t.Fatal(err)
	}
	if _, ws := feed(t, c, msg(feedB, 5), msg(feedB, 11)); len(ws) != 1 || ws[0].origin.Seq != 11 {
		t.Fatalf("after a Resume up to 10, wrote %+v for 5 and 11; want 11 only", ws)
	}
}

// TestResumeCountsStreamsBeyondTheTail: a destination stream holds
// source stream A up to 40, then DefaultTailRecords records of B: the
// tail Resume reads holds only B's. A coming back at 50 may have been
// written before the tail's reach, its 41..49 then unmarked: it is
// counted (Stats.Unresumed). A stream starting at its first position,
// and any stream after a tail that was not full, are not.
func TestResumeCountsStreamsBeyondTheTail(t *testing.T) {
	dst := transport.StreamID{Topic: "dest"}
	a := transport.StreamID{Feed: 1, Session: 1}
	b := transport.StreamID{Feed: 1, Session: 2}
	n := transport.StreamID{Feed: 1, Session: 3}
	for _, c := range []struct {
		name string
		tail []transport.Message
		want uint64
	}{
		{"full tail", tailOf(dst, b, 11, DefaultTailRecords+10), 1},
		{"short tail", tailOf(dst, b, 12, DefaultTailRecords+10), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			core := newCore(t, 0)
			if _, err := core.Resume(c.tail); err != nil {
				t.Fatal(err)
			}
			feed(t, core, startEv(a, 50), msg(a, 50), startEv(n, 1), msg(n, 1), msg(b, DefaultTailRecords+11))
			if s := core.Stats(); s.Unresumed != c.want {
				t.Fatalf("Unresumed %d, want %d", s.Unresumed, c.want)
			}
		})
	}
}
