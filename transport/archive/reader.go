package archive

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// Stats counts what a Reader read.
type Stats struct {
	// Records counts the records read; Messages, Gaps and Ends those of
	// the feed that were messages, gap markers and end markers.
	Records, Messages, Gaps, Ends uint64
	// OtherStreams counts records of other streams, NoOrigin records
	// without origin headers (not written by a recorder), Malformed
	// records whose origin headers or gap marker could not be read: all
	// skipped.
	OtherStreams, NoOrigin, Malformed uint64
	// Seeks counts the positions looked up, Probes the reads they made.
	Seeks, Probes uint64
}

// Start says where a Reader starts reading (Seek).
type Start struct {
	kind startKind
	pos  Pos
	time time.Time
}

type startKind uint8

const (
	startEarliest startKind = iota
	startPos
	startTime
)

// Earliest starts at the first record the log still holds.
func Earliest() Start { return Start{} }

// At starts at the first record of the feed at or after p: the message
// at p, or the gap marker that covers it, or what comes next — the end
// marker of p's session when p is one past its last position.
func At(p Pos) Start { return Start{kind: startPos, pos: p} }

// AtTime starts at the first record stamped at or after t (the
// message's publish time, which a recorder keeps as the record's time).
func AtTime(t time.Time) Start { return Start{kind: startTime, time: t} }

// Pos returns the position s starts at, for a Start made by At.
func (s Start) Pos() (Pos, bool) { return s.pos, s.kind == startPos }

// Time returns the time s starts at, for a Start made by AtTime.
func (s Start) Time() (time.Time, bool) { return s.time, s.kind == startTime }

func (s Start) String() string {
	switch s.kind {
	case startPos:
		return "position " + s.pos.String()
	case startTime:
		return "time " + s.time.Format(time.RFC3339Nano)
	}
	return "earliest"
}

// Reader reads the records of one feed from a log, as what they stand
// for in the feed (see the package documentation). It is not safe for
// concurrent use.
type Reader struct {
	log    transport.Log
	feed   uint32
	stream transport.StreamID // the log's stream that holds the feed
	chosen bool
	seeked bool   // a Seek positioned the reader
	pos    uint64 // the log position read next
	// trimmed: the last Seek to a position landed on the log's first
	// position, which is past 0: the log deleted what came before.
	trimmed bool
	// deleted: the last read started past where the reader was, at the
	// log's new first position: the log deleted what lay between.
	deleted bool
	u       *unwrapper
	stats   Stats
	// span is the most records one read returned: a search reads from
	// the start of a range that one read may cover.
	span uint64
	// lastEnd: the last record of the feed lastOf found is an end
	// marker, which a search puts after its position (endOrder).
	lastEnd bool
	// hints are the last record read of each of the last sessions of
	// the feed read, with its log position: a search for a position of
	// one of them guesses from it.
	hints [4]hint
}

// hint is a record of the feed: its position, and the log's.
type hint struct {
	pos Pos
	off uint64
	ok  bool
}

// note remembers the record of the feed at pos, at log position off, as
// its session's hint, in place of the oldest session's.
func (r *Reader) note(pos Pos, off uint64) {
	i := 0
	for j := range r.hints {
		if h := &r.hints[j]; h.ok && h.pos.Session == pos.Session {
			i = j
			break
		}
		if !r.hints[j].ok || r.hints[j].off < r.hints[i].off {
			i = j
		}
	}
	r.hints[i] = hint{pos: pos, off: off, ok: true}
}

// hintFor returns the hint of session, if there is one.
func (r *Reader) hintFor(session uint64) (hint, bool) {
	for _, h := range r.hints {
		if h.ok && h.pos.Session == session {
			return h, true
		}
	}
	return hint{}, false
}

// eachReader is a transport.Log that can hand its records one at a time
// (package transport/kafka's Log does), reusing the message: a reader
// then allocates nothing per record.
type eachReader interface {
	ReadEach(ctx context.Context, stream transport.StreamID, pos uint64, fn func(*transport.Message)) (int, error)
}

// NewReader returns a Reader of feed in log. The caller keeps log, and
// closes it after the Reader's last use.
func NewReader(log transport.Log, feed uint32) *Reader {
	return &Reader{log: log, feed: feed, u: newUnwrapper(feed)}
}

// Stats returns the counters.
func (r *Reader) Stats() Stats { return r.stats }

// Stream is the log's stream that holds the feed, once a Seek found it.
func (r *Reader) Stream() transport.StreamID { return r.stream }

// Position returns the log position the reader reads from next: after
// the last record a read returned, or where the last Seek landed.
func (r *Reader) Position() uint64 { return r.pos }

// Trimmed reports whether the last Seek to a position landed on the
// log's first position, past 0, with nothing of the feed at or after
// that position before it: what came before was deleted by the log's
// retention, or never recorded. After a Seek to a time, it reports
// whether the Seek landed on the log's first position, past 0: records
// before it, deleted, may have been stamped at or after the time.
func (r *Reader) Trimmed() bool { return r.trimmed }

// Deleted reports whether the last Next (or Append) read on after
// records the log deleted (its retention) since the reader was
// positioned there: the log read on from its first position, and what
// the records before and after do not show of the feed is lost.
func (r *Reader) Deleted() bool { return r.deleted }

// Seek positions the reader at s. It returns ErrEmpty when the log does
// not exist yet, and ErrNoStream when the log has several streams and
// none holds the feed. Until a Seek succeeds (after one failed
// too), Next returns ErrNotPositioned.
func (r *Reader) Seek(ctx context.Context, s Start) error {
	r.seeked = false // a Seek that fails leaves the reader nowhere
	if err := r.choose(ctx); err != nil {
		return err
	}
	r.stats.Seeks++
	first, next, err := r.log.Bounds(ctx, r.stream)
	if err != nil {
		return err
	}
	r.trimmed = false
	switch s.kind {
	case startEarliest:
		r.pos = first
	case startTime:
		if r.pos, err = r.log.PositionAt(ctx, r.stream, s.time); err != nil {
			return err
		}
		r.trimmed = r.pos == first && first > 0
	case startPos:
		if r.pos, err = r.find(ctx, s.pos, first, next); err != nil {
			return err
		}
		r.trimmed = r.pos == first && first > 0
	}
	r.seeked = true
	return nil
}

// Next reads on: the events of the feed in the records of one read of
// the log, in order — possibly none, when the records read were not the
// feed's. It waits, until ctx ends, for a record when the log holds no
// more yet. The events are the caller's. Before a Seek it returns
// ErrNotPositioned.
func (r *Reader) Next(ctx context.Context) ([]transport.Event, error) {
	return r.Append(ctx, nil)
}

// Append is Next, appending the events to evs: a caller that reuses
// its slices allocates nothing per event.
func (r *Reader) Append(ctx context.Context, evs []transport.Event) ([]transport.Event, error) {
	if !r.seeked {
		return evs, ErrNotPositioned
	}
	from := r.pos
	r.deleted = false
	if each, ok := r.log.(eachReader); ok {
		skipped := false
		_, err := each.ReadEach(ctx, r.stream, r.pos, func(m *transport.Message) {
			skipped = skipped || r.pos == from && m.Seq > from
			r.pos = m.Seq + 1
			n := len(evs)
			if n == cap(evs) {
				evs = slices.Grow(evs, 256)
			}
			evs = evs[:n+1] // take sets the whole event, or it is dropped
			if !r.take(m, &evs[n]) {
				evs = evs[:n]
			} else if hs := evs[n].Message.Headers; hs != nil {
				// The log reuses the headers slice: keep a copy.
				evs[n].Message.Headers = slices.Clone(hs)
			}
		})
		if skipped {
			r.checkDeleted(ctx, from)
		}
		return evs, err
	}
	ms, err := r.log.Read(ctx, r.stream, r.pos)
	if err != nil {
		return evs, err
	}
	if len(ms) > 0 && ms[0].Seq > from {
		r.checkDeleted(ctx, from)
	}
	evs = slices.Grow(evs, len(ms))
	for i := range ms {
		r.pos = ms[i].Seq + 1
		n := len(evs)
		evs = evs[:n+1] // take sets the whole event, or it is dropped
		if !r.take(&ms[i], &evs[n]) {
			evs = evs[:n]
		}
	}
	return evs, nil
}

// checkDeleted is called when a read from position from returned a
// first record past it: the log skipped records it does not hold — a
// transaction's markers, or records its retention deleted, which only
// the log's first position, now past from, tells apart. When that
// cannot be asked, they are taken for deleted.
func (r *Reader) checkDeleted(ctx context.Context, from uint64) {
	first, _, err := r.log.Bounds(ctx, r.stream)
	r.deleted = err != nil || first > from
}

// take unwraps one record into ev and counts it; false when it is not
// the feed's.
func (r *Reader) take(m *transport.Message, ev *transport.Event) bool {
	_, ok := r.takePos(m, ev)
	return ok
}

// takePos is take, returning the record's feed position too.
func (r *Reader) takePos(m *transport.Message, ev *transport.Event) (Pos, bool) {
	r.stats.Records++
	pos, kind := r.u.unwrap(m, ev)
	switch kind {
	case recFeed:
		r.note(pos, m.Seq)
		switch ev.Kind {
		case transport.EventGap:
			r.stats.Gaps++
		case transport.EventStreamEnd:
			r.stats.Ends++
		default:
			r.stats.Messages++
		}
		return pos, true
	case recOtherFeed:
		r.stats.OtherStreams++
	case recNoOrigin:
		r.stats.NoOrigin++
	default:
		r.stats.Malformed++
	}
	return pos, false
}

// Last returns the position of the feed's last record (a gap marker's
// last position, an end marker's LastSeq), found among the log's last 1024 records; ok is false
// when there is none.
func (r *Reader) Last(ctx context.Context) (p Pos, ok bool, err error) {
	if err := r.choose(ctx); err != nil {
		return p, false, err
	}
	first, next, err := r.log.Bounds(ctx, r.stream)
	if err != nil || next <= first {
		return p, false, err
	}
	return r.lastOf(ctx, r.stream, max(first, next-min(next, 1024)), next)
}

// lastOf reads stream's records from..to-1 and returns the feed's last
// (lastEnd says whether it is an end marker).
func (r *Reader) lastOf(ctx context.Context, stream transport.StreamID, from, to uint64) (p Pos, ok bool, err error) {
	r.lastEnd = false
	for from < to {
		r.stats.Probes++
		ms, err := r.log.Read(ctx, stream, from)
		if err != nil {
			return p, false, err
		}
		for i := range ms {
			if ms[i].Seq >= to {
				return p, ok, nil
			}
			from = ms[i].Seq + 1
			var ev transport.Event
			if q, mine := r.takePos(&ms[i], &ev); mine {
				p, ok, r.lastEnd = q, true, ev.Kind == transport.EventStreamEnd
			}
		}
	}
	return p, ok, nil
}

// choose finds the log's stream that holds the feed: the only one, or
// the one whose last records are the feed's.
func (r *Reader) choose(ctx context.Context) error {
	if r.chosen {
		return nil
	}
	streams, err := r.log.Streams(ctx)
	switch {
	case err != nil:
		return err
	case len(streams) == 0:
		return ErrEmpty
	case len(streams) == 1:
		r.stream, r.chosen = streams[0], true
		return nil
	}
	for _, s := range streams {
		first, next, err := r.log.Bounds(ctx, s)
		if err != nil {
			return err
		}
		if next <= first {
			continue
		}
		if _, ok, err := r.lastOf(ctx, s, max(first, next-min(next, 64)), next); err != nil {
			return err
		} else if ok {
			r.stream, r.chosen = s, true
			return nil
		}
	}
	return fmt.Errorf("%w: %d streams, none with a record of feed %d among its last: name one (partition=)", ErrNoStream, len(streams), r.feed)
}
