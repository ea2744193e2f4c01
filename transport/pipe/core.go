package pipe

import (
	"fmt"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// Defaults of Config.MaxInFlight and Config.MaxInFlightBytes. What is
// in flight is the pipe's buffer against its destination's latency:
// with one produce request in flight to a partition (an idempotent
// Kafka producer's rule) a pipe forwards at most MaxInFlight messages a
// round trip, fsync included, and a source that does not wait (a
// multicast feed) loses what comes while the destination is slower than
// that, beyond what the socket holds. With 8,192 a recorder of 64-byte
// messages sampled every 5 ms sat at the cap, forwarding 8,192 a round
// trip, its reads stalling until its socket overflowed; with flow
// control it kept 0.88–1.07M msgs/s against 1.27–1.58M with 65,536
// (BenchmarkRecorder, 4 interleaved rounds, 2 cores). The byte bound keeps large
// messages from holding MaxInFlight times their size: about what a
// Kafka producer buffers (buffer.memory, 32 MiB) and librdkafka's
// message count (queue.buffering.max.messages, 100,000) allow.
const (
	DefaultMaxInFlight      = 65536
	DefaultMaxInFlightBytes = 64 << 20
)

// Write is a message to publish to the destination, and the ticket its
// outcome is reported under (Core.Done). Message's slices stay valid
// until the next call to Core.Event: the destination's Publish copies
// what it keeps.
type Write struct {
	Ticket  uint64
	Message transport.Message
}

// Ack acknowledges the source cumulatively: every message of Stream up
// to and including Seq is in the destination.
type Ack struct {
	Stream transport.StreamID
	Seq    uint64
}

// Stats are a Core's counters.
type Stats struct {
	// Forwarded counts the source's messages written to the
	// destination, Markers the gap markers (ResumeGaps of them for what
	// the source no longer held when the pipe resumed), Accepted the
	// writes the destination has accepted.
	Forwarded, Markers, ResumeGaps, Accepted uint64
	// Marked counts the source positions the gap markers cover.
	Marked uint64
	// EndMarkers counts the end markers written (transport.EndMarker):
	// one for each feed stream its publisher closed.
	EndMarkers uint64
	// Skipped counts the source's messages (and gaps) dropped because
	// the destination already held them.
	Skipped uint64
	// InFlight is how many events are taken from the source and not yet
	// accepted by the destination (or not yet acknowledged in order),
	// InFlightBytes the size of their messages (payload, key and
	// headers).
	InFlight, InFlightBytes int
	// Acks counts the acknowledgements a Pipe sent to the source (a
	// Core sends none).
	Acks uint64
	// Unresumed counts the source streams that Resume did not find,
	// whose first event came past their first position (a log's: any
	// first event), when the tail it read was full (DefaultTailRecords
	// of a destination stream): the pipe may have written them before
	// the tail's reach, and what they sent while it was down is then
	// unmarked (a feed), or what it wrote is written again (a log read
	// from its start). (A multicast
	// source joined with join=earliest, a pipe's default, reports what
	// it no longer holds as a Gap from position 1, which is written.)
	// A feed session this pipe met, that ended idle and was forgotten
	// (EndedForgotten) before it came back, is counted too: Unresumed
	// exceeds the streams really not found by at most EndedForgotten.
	Unresumed uint64
	// MalformedTail counts the destination records given to Resume
	// whose origin headers do not decode (Core.TailError says how the
	// first does not): ignored, as if no pipe had written them.
	MalformedTail uint64
	// Interleaved counts the source streams that ResumeAcknowledged
	// did not resume because their positions in the destination's
	// tail go backwards (see there).
	Interleaved uint64
	// LookedBack counts the destination records read further back than
	// the tail given to Resume (Config.Back), and FoundBack the source
	// streams found there.
	LookedBack, FoundBack uint64
	// HeldRunsDropped counts the runs of held positions forgotten
	// past maxHeldRuns of a source stream (see run): a log's, written
	// again if given again; a feed's, the hole before each taken as
	// held.
	HeldRunsDropped uint64
	// EndedForgotten counts the feed sessions that ended idle and were
	// forgotten (see forget).
	EndedForgotten uint64
	// RereadsFailed counts the reads of the destination's last records
	// again (Config.Tail), and of the pages further back that follow
	// them (Config.Back), that failed or took longer than
	// Config.RereadTimeout, one per stream start: the stream started
	// resumes from what was read before, as without Config.Tail.
	RereadsFailed uint64
}

// Core is what a pipe decides, without I/O: which messages and gap
// markers to write for each event of the source, and which cumulative
// acknowledgements the destination's receipts allow. It is not safe for
// concurrent use.
type Core struct {
	max      int
	maxBytes int
	ring     []entry // events in flight, by ticket modulo len(ring)
	head     uint64  // ticket of the oldest event in flight
	next     uint64  // ticket of the next event
	bytes    int     // the sizes (msgBytes) of the events in flight

	acks    map[transport.StreamID]uint64 // acknowledgements not yet taken
	resumed map[transport.StreamID]*resume
	// own are the source's streams: those it started or delivered a
	// message of. A gap of another stream (a gap marker a log delivers
	// as the gap of the stream it stands for) is written, and not
	// acknowledged: the source acknowledges it with what follows it.
	own map[transport.StreamID]bool
	// cur is the stream of the last message or stream start, one of
	// own, and curResume its resumed entry (nil if none): a feed's
	// events come from one stream, and each lookup in the maps above,
	// keyed by a StreamID, topic string and all, cost about as much as
	// the rest of an event. curOK says they are set; Resume unsets it.
	cur       transport.StreamID
	curResume *resume
	curOK     bool
	// deep: the destination streams whose tail given to Resume was
	// full (DefaultTailRecords records, so a source stream older than
	// them was not seen), and how far back LookFor has read them;
	// deleted once read to their start. While one is left, a source
	// stream not found may be further back (Stats.Unresumed).
	deep map[transport.StreamID]*lookback
	// decided: source streams that LookFor found further back, or
	// found interleaved there or Resume in the tail: not looked for
	// again as streams not found (one found is looked for further
	// back only while its first event is older than what was read).
	decided map[transport.StreamID]bool
	// ended: the feed streams that ended idle last, forgotten (forget).
	ended endedSet
	// dropOnly: the source is acknowledged (ResumeAcknowledged), so
	// Resume only drops what the destination holds: a stream that
	// comes back past it gets no resume gap marker.
	dropOnly bool
	tailErr  error // the first malformed record Resume found
	// reread is the stream Reread read the destination for, until its
	// start is taken (rereadOK); rereadFailed: that read failed (its
	// look-back too), so the stream is not looked for further back.
	reread       transport.StreamID
	rereadOK     bool
	rereadFailed bool
	// ends: each destination stream's position after the last record
	// read of it (Resume, Reread, RereadSince): what Unread compares
	// the destination's ends with. Bounded by the destination's streams.
	ends map[transport.StreamID]uint64

	out  []Write
	hdrs []transport.Header
	vals []byte

	stats Stats
}

// entry is one event in flight: its stream, the position acknowledging
// it acknowledges, its size (msgBytes) and whether the destination
// accepted it.
type entry struct {
	stream transport.StreamID
	pos    uint64
	size   int
	done   bool
	ack    bool // acknowledging it means something to the source
}

// resume is what the destination held of a source stream when it was
// read (Resume, AddPage, Reread).
type resume struct {
	last uint64 // the last position written, a message's or a marker's end
	// held: the runs of positions that the destination's records read
	// hold (see run), in order; dest is the destination stream they
	// are in.
	held []run
	dest transport.StreamID
	feed bool // a feed's stream: its first run reaches down to 0 (see run)
	// ended: the destination holds the stream's end marker (at last):
	// its StreamEnd is not written again.
	ended   bool
	checked bool // the stream's first event of this run was compared with last
	// pend is the resume gap not yet written, found at pendAt.
	pend    transport.Gap
	pendAt  time.Time
	hasPend bool
}

// NewCore returns a Core that takes no more events while maxInFlight
// are in flight (0: DefaultMaxInFlight) or while those in flight hold
// maxBytes of messages or more (0: DefaultMaxInFlightBytes; the event
// that reaches it is taken).
func NewCore(maxInFlight, maxBytes int) (*Core, error) {
	if maxInFlight == 0 {
		maxInFlight = DefaultMaxInFlight
	}
	if maxBytes == 0 {
		maxBytes = DefaultMaxInFlightBytes
	}
	if maxInFlight < 1 {
		return nil, &ConfigError{Field: "MaxInFlight", Value: maxInFlight, Want: "must be ≥ 1"}
	}
	if maxBytes < 1 {
		return nil, &ConfigError{Field: "MaxInFlightBytes", Value: maxBytes, Want: "must be ≥ 1"}
	}
	// One event can make two writes: a resume gap marker and a message.
	return &Core{
		max: maxInFlight, maxBytes: maxBytes, ring: make([]entry, maxInFlight+2),
		acks: map[transport.StreamID]uint64{}, resumed: map[transport.StreamID]*resume{}, own: map[transport.StreamID]bool{},
		deep: map[transport.StreamID]*lookback{}, decided: map[transport.StreamID]bool{},
		ends: map[transport.StreamID]uint64{},
	}, nil
}

// Full reports whether the pipe must wait for receipts before it takes
// the next event from the source.
func (c *Core) Full() bool { return c.next-c.head >= uint64(c.max) || c.bytes >= c.maxBytes }

// InFlight is how many events are in flight.
func (c *Core) InFlight() int { return int(c.next - c.head) }

// Stats returns the counters.
func (c *Core) Stats() Stats {
	s := c.stats
	s.InFlight, s.InFlightBytes = c.InFlight(), c.bytes
	return s
}

// Event takes one event of the source and returns what
// to write to the destination for it: nothing (a stream start, an end
// other than a feed's closed by its publisher, a message or end the
// destination already holds), the message with its origin headers, a
// gap marker, or an end marker (a feed's StreamEnd closed by its
// publisher, transport.EndMarker, so that the destination's readers
// can tell its end from a tail the destination lacks) — preceded, for the first event of a stream
// the pipe resumed, by a gap marker for what the source no longer holds.
// Call it only when Full is false. The returned slice is valid until the
// next call.
//
// now is the clock of gap markers, called only to write one.
func (c *Core) Event(ev *transport.Event, now func() time.Time) []Write {
	c.out = c.out[:0]
	switch ev.Kind {
	case transport.EventMessage:
		m := &ev.Message
		c.setOwn(m.Stream, m.Seq)
		c.checkResume(m.Stream, m.Seq, now)
		c.flushResume(m.Stream)
		if c.held(m.Stream, m.Seq) {
			c.skip(m.Stream, m.Seq)
			break
		}
		c.stats.Forwarded++
		c.write(m.Stream, m.Seq, c.forward(m))
	case transport.EventGap:
		g := ev.Gap
		first := g.From
		if lostOutside(g.Reason) {
			// A loss out of the source's window at once is, for a
			// stream the pipe resumes, what left it while the pipe was
			// down (a JoinEarliest receiver's history older than the
			// publisher's window): the resume gap runs to its end.
			first = g.To + 1
		}
		c.checkResume(g.Stream, first, now)
		if c.extendResume(&g) {
			break
		}
		c.flushResume(g.Stream)
		if r := c.resumedOf(g.Stream); r != nil {
			// Marked from the first position the destination lacks;
			// skipped when it lacks none (a hole before g.To, a refused
			// write, is marked, not left silent).
			g.From = r.firstMissing(g.From)
			if g.From > g.To || r.holds(g.From) {
				c.skip(g.Stream, g.To)
				break
			}
		}
		c.stats.Markers++
		c.stats.Marked += g.Len()
		c.write(g.Stream, g.To, transport.GapMarker(g, now()))
	case transport.EventStreamStart:
		c.setOwn(ev.Start.Stream, ev.Start.FirstSeq)
		if r := c.resumedOf(ev.Start.Stream); r == nil || r.beyond(ev.Start.FirstSeq) {
			// A start at or before the position after the last written
			// says nothing yet: the event after it does (a message,
			// or a Gap of what the source no longer held).
			c.checkResume(ev.Start.Stream, ev.Start.FirstSeq, now)
		}
		c.rereadOK = false
	case transport.EventStreamEnd:
		c.flushResume(ev.End.Stream)
		c.endMarker(ev.End, now)
		c.forget(ev.End)
	}
	return c.out
}

// endMarker writes the end marker of a feed's stream that its publisher
// closed (EndClosed; not one a subscriber ended for silence or took for
// replaced, whose end it only guesses), unless the destination holds
// it already (Resume found it). Its position is the end's LastSeq, as a
// gap marker's is its last.
func (c *Core) endMarker(end transport.StreamEnd, now func() time.Time) {
	if end.Stream.Topic != "" || end.Reason != transport.EndClosed {
		return
	}
	// The marker acknowledges nothing: the message or gap marker at
	// LastSeq did, and a source hears of each position once.
	if r := c.resumedOf(end.Stream); r != nil && r.ended && end.LastSeq <= r.last {
		c.stats.Skipped++
		return
	}
	c.stats.EndMarkers++
	m := transport.EndMarker(end, now())
	c.out = append(c.out, Write{Ticket: c.push(end.Stream, end.LastSeq, msgBytes(&m), false), Message: m})
}

// checkResume finds, at the first event (at position first; a start at
// or before r.last+1 is not one) of a stream that the destination held
// up to r.last, the positions between them:
// the source no longer held them when the pipe came back. Their gap
// marker waits for the stream's next event (flushResume), so that a loss
// the source reports right after, of what left its window while the pipe
// was joining, joins it (extendResume).
func (c *Core) checkResume(stream transport.StreamID, first uint64, now func() time.Time) {
	r := c.resumedOf(stream)
	if r == nil || r.checked {
		return
	}
	r.checked = true
	if c.dropOnly || !r.beyond(first) {
		return
	}
	r.pend = transport.Gap{Stream: stream, From: r.last + 1, To: first - 1, Reason: transport.GapSourceDown}
	r.pendAt, r.hasPend = now(), true
}

// beyond reports whether pos is past the position after the last
// written (which a record claiming the last position there is has not:
// r.last+1 would wrap to 0).
func (r *resume) beyond(pos uint64) bool { return pos > r.last && pos-r.last > 1 }

// extendResume adds to a stream's resume gap a loss of the positions
// right after it that left the source's window before the pipe, back,
// could get them (GapUnrecoverable, or GapOutpaced from a publisher
// without flow control): they too are lost because the pipe was down.
// It reports whether it took g.
func (c *Core) extendResume(g *transport.Gap) bool {
	r := c.resumedOf(g.Stream)
	if r == nil || !r.hasPend || !lostOutside(g.Reason) || g.From > r.pend.To+1 {
		return false
	}
	r.pend.To = max(r.pend.To, g.To)
	return true
}

// lostOutside reports whether a gap of reason is a loss of positions
// that left the source's window before they could be had: unrecoverable,
// or outpaced by a publisher without flow control.
func lostOutside(reason transport.GapReason) bool {
	return reason == transport.GapUnrecoverable || reason == transport.GapOutpaced
}

// flushResume writes a stream's resume gap marker, if one waits.
func (c *Core) flushResume(stream transport.StreamID) {
	r := c.resumedOf(stream)
	if r == nil || !r.hasPend {
		return
	}
	r.hasPend = false
	c.stats.Markers++
	c.stats.ResumeGaps++
	c.stats.Marked += r.pend.Len()
	c.write(stream, r.pend.To, transport.GapMarker(r.pend, r.pendAt))
}

// held reports whether the destination held stream's position pos when
// it was read (see run).
func (c *Core) held(stream transport.StreamID, pos uint64) bool {
	r := c.resumedOf(stream)
	return r != nil && pos <= r.last && r.holds(pos) // past last: no search
}

func (c *Core) skip(stream transport.StreamID, pos uint64) {
	c.stats.Skipped++
	t := c.push(stream, pos, 0, c.isOwn(stream))
	c.ring[t%uint64(len(c.ring))].done = true
	c.pop()
}

func (c *Core) write(stream transport.StreamID, pos uint64, m transport.Message) {
	c.out = append(c.out, Write{Ticket: c.push(stream, pos, msgBytes(&m), c.isOwn(stream)), Message: m})
}

// push puts a write in flight; its acceptance acknowledges the source up
// to pos when ack.
func (c *Core) push(stream transport.StreamID, pos uint64, size int, ack bool) uint64 {
	t := c.next
	c.next++
	c.ring[t%uint64(len(c.ring))] = entry{stream: stream, pos: pos, size: size, ack: ack}
	c.bytes += size
	return t
}

// msgBytes is what m holds: its payload, key and headers.
func msgBytes(m *transport.Message) int {
	n := len(m.Payload) + len(m.Key)
	for _, h := range m.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// setOwn records stream, whose event at position pos is at hand, as one
// of the source's, and makes it cur.
func (c *Core) setOwn(stream transport.StreamID, pos uint64) {
	if c.curOK && stream == c.cur {
		return
	}
	// A feed's session at its first position may be new; a log's
	// stream read again from its start was written whole, if at all.
	if !c.own[stream] && len(c.deep) > 0 && !c.dropOnly && (pos > 1 || stream.Topic != "") && c.resumed[stream] == nil && !c.ended.has(stream) {
		c.stats.Unresumed++
	}
	c.own[stream] = true
	c.cur, c.curResume, c.curOK = stream, c.resumed[stream], true
}

// isOwn reports whether stream is one of the source's.
func (c *Core) isOwn(stream transport.StreamID) bool {
	if c.curOK && stream == c.cur {
		return true
	}
	return c.own[stream]
}

// resumedOf is stream's entry in resumed, nil if none.
func (c *Core) resumedOf(stream transport.StreamID) *resume {
	if c.curOK && stream == c.cur {
		return c.curResume
	}
	return c.resumed[stream]
}

// Done records that the destination accepted the write of ticket.
// Acknowledgements become available (TakeAcks) once every event before it
// is accepted too.
func (c *Core) Done(ticket uint64) error {
	if ticket < c.head || ticket >= c.next {
		return fmt.Errorf("%w: %d (in flight: %d..%d)", ErrBadTicket, ticket, c.head, c.next)
	}
	e := &c.ring[ticket%uint64(len(c.ring))]
	if e.done {
		return fmt.Errorf("%w: %d is done already", ErrBadTicket, ticket)
	}
	e.done = true
	c.stats.Accepted++
	c.pop()
	return nil
}

// position returns the source stream and position of the write of
// ticket (a gap marker's end), if it is in flight.
func (c *Core) position(ticket uint64) (transport.StreamID, uint64, bool) {
	if ticket < c.head || ticket >= c.next {
		return transport.StreamID{}, 0, false
	}
	e := &c.ring[ticket%uint64(len(c.ring))]
	return e.stream, e.pos, true
}

// pop retires the accepted events at the head, in order. Of a run of
// one stream's events, only the last acknowledgement goes to acks.
func (c *Core) pop() {
	var (
		last  *entry // the last acknowledging event retired, not yet in acks
		flush = func() {
			if last != nil {
				c.acks[last.stream] = last.pos
				last = nil
			}
		}
	)
	for c.head < c.next {
		e := &c.ring[c.head%uint64(len(c.ring))]
		if !e.done {
			break
		}
		c.bytes -= e.size
		if e.ack {
			if last != nil && last.stream != e.stream {
				flush()
			}
			last = e
		}
		c.head++
	}
	flush()
}

// TakeAcks appends to dst the acknowledgements that receipts allowed
// since the last call, one per stream (the highest position), and
// returns it.
func (c *Core) TakeAcks(dst []Ack) []Ack {
	for s, pos := range c.acks {
		dst = append(dst, Ack{Stream: s, Seq: pos})
		delete(c.acks, s)
	}
	return dst
}
