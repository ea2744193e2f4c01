package multicast

import (
	"log/slog"
	"time"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/archive"
)

// ArchiveStats counts what a subscriber with an archive took from it.
type ArchiveStats struct {
	// FromArchive counts the messages delivered from the archive, and
	// ArchiveGaps the gaps whose range and reason the archive gave (its
	// gap markers, and what it lacked).
	FromArchive, ArchiveGaps uint64
	// Replays counts the times the archive was read — a late joiner's
	// history, a loss the publisher could not repair, the tail of a
	// session that ended without closing — and Merges the times the
	// subscriber went back to the live feed after one.
	Replays, Merges uint64
	// LiveDropped counts the live events dropped because the buffer
	// (ArchiveConfig.Buffer) was full: they were read from the archive
	// instead, and the switch back to live waited.
	LiveDropped uint64
	// Duplicates counts messages received twice, from the live feed
	// and the archive (or from the archive twice: two recorders writing
	// one topic), and dropped the second time: their position was
	// delivered already, or reported in a Gap (a gap marker of one
	// recorder, then the other's copy). Nothing else is counted: not a
	// live message the merger delivered itself, nor a gap, a stream's
	// start or end the archive stood in for.
	Duplicates uint64
	// GaveUp counts the times the archive gave nothing more of what was
	// needed for ArchiveConfig.Wait, and Errors the reads of it that
	// failed, or timed out though the log held more (ErrArchiveTimeout:
	// the archive hangs).
	GaveUp, Errors uint64
	// OpenGaps counts the open Gaps (transport.Gap.Open, also counted
	// in ArchiveGaps): sessions that ended where the archive's records
	// of them stop, the live feed having said nothing of where they
	// ended, so that their tail, if they had one, is missing.
	OpenGaps uint64
	// Ends counts the sessions the archive ended: an end marker (the
	// recorder wrote the publisher's close, transport.EndMarker) ended
	// them where their publisher did, at once, with no open Gap.
	Ends uint64
	// LateLive counts the live events that came after their session
	// was ended with an open Gap, inside it (the live feed had been
	// silent for ArchiveConfig.Wait, and then was not): dropped, as
	// sessions are never mixed, and their positions stay in that Gap,
	// which they show was not empty. The first of each such session is
	// logged (a warning).
	LateLive uint64
	// Buffered is the live events held now.
	Buffered int
}

// archiveBatch is what the archive's reader hands the merger: the
// events of one read, or word that it had nothing more for a while.
type archiveBatch struct {
	gen    uint64
	events []transport.Event
	// seeked marks the first batch after the reader found where to
	// start: want is the position it looked for (zero for the earliest
	// record, or a time), trimmed that the log had deleted what came
	// before where it landed.
	seeked  bool
	want    archive.Pos
	trimmed bool
	// prior is the feed's last record before where a seek to a time
	// landed (zero for none, or another seek), and priorEnd whether it
	// is an end marker.
	prior    archive.Pos
	priorEnd bool
	// deleted: the log deleted records the replay had yet to read, and
	// read on from its new start: the first record after them does not
	// follow the last before.
	deleted bool
	// idle: nothing of the feed for ArchiveConfig.Wait; err: a read
	// failed meanwhile.
	idle bool
	err  error
}

// replayCmd is an order for the archive's reader: read from start, as
// replay gen; or, with stop, stop reading.
type replayCmd struct {
	gen   uint64
	start archive.Start
	// seq, when not zero, replaces start: that sequence number of the
	// session of the archive's last record (Join seq:N).
	seq  uint64
	stop bool
}

// action is what the merger did with a live event at the head.
type action uint8

const (
	actDeliver action = iota + 1 // deliver the event as it is
	actDrop                      // delivered already: dropped
	actEmitted                   // what to deliver for it is in out
	actBlock                     // the archive must be read first
)

// untilKind says how far a replay reads before the live events held
// take over.
type untilKind uint8

const (
	untilNone    untilKind = iota // no live event is held: read on
	untilPos                      // up to a position
	untilSession                  // to the end of a session
)

// merger decides, without I/O, what a subscriber with an archive
// delivers: the engine's live events, and, where they fall short, the
// archive's records — a late joiner's history, what a loss the
// publisher could not repair covered, the tail of a session that ended
// without closing — merged so that each position of the feed is
// delivered once, or inside one Gap, in order, sessions never mixed.
//
// While it reads the archive (a replay) it holds the live events that
// arrive (copies, in a bounded queue), and goes back to them when the
// archive reaches the first of them; a live event the archive must
// stand in for (a recoverable Gap, the end of a session that did not
// close) is read past. The driver runs the reader its commands ask for
// (takeCommand) and hands it the batches (archive).
type merger struct {
	feed uint32
	log  *slog.Logger

	// What the application has been given: cur's events up to next-1.
	// open: the last was a message, whose further fragments (positions
	// a record of the archive does not show) may follow it.
	cur            transport.StreamID
	started, ended bool
	next           uint64
	open           bool
	// idleEnded: cur ended for silence (EndIdle). The engine starts
	// such a session again when its publisher is heard again (an
	// outage, not a crash: reliable's resume.go); so does the merger.
	idleEnded bool

	out   []transport.Event
	outAt int

	// pend is the archive's batch being merged, from pendAt on, then
	// what its idle said: merged as the application takes events (pop),
	// so that a message of the archive the application takes as it is
	// is not copied into out first. A batch is pending only while its
	// replay is under way: live events are held meanwhile.
	pend     []transport.Event
	pendAt   int
	pendIdle bool
	// spent is the events slice of the last batch merged, which the
	// driver may give the reader back (takeSpent).
	spent []transport.Event

	q    eventQueue
	lead int // events at q's front a replay reads past
	// settled is the events at q's front that settleHeld accounted
	// for: their messages delivered from the queue's copies, or counted
	// as duplicates then. Dropped from the queue, they are not counted
	// again.
	settled int
	// dropped is, for each session, the last position the live events
	// dropped from q (its bound reached) stood for: what the live feed
	// showed of a session that the archive may lack (with end, its
	// StreamEnd was among them). Oldest first, of sessions not over for
	// the application, at most maxDropped.
	dropped []droppedPos
	// endKnown: the live events said where cur ended (its StreamEnd was
	// held, or dropped from q), at endLast. Without it a session the
	// archive shows over ends with an open Gap (openGap).
	endKnown bool
	endLast  uint64
	endWhy   transport.EndReason
	// liveSession is the latest session of the live events handed.
	liveSession uint64
	// openEnd is where the last open Gap started (zero for none): live
	// events of its session from there on come too late (lateLive);
	// saidLate: the first was logged.
	openEnd  archive.Pos
	saidLate bool
	// liveStart is the live feed's StreamStart of a session that
	// replaced another, handed before the application had anything
	// (join seq:N drops it, being before N; a replay holds it): the
	// StreamStart the merger makes for that session says which session
	// it replaced, as the engine's does under join live.
	liveStart transport.StreamStart

	// joinSeq is join seq:N's N (0 for another join), and join where
	// it starts the history: N of the session the archive's reader
	// found (its last record's), once it did (joinGen's seek). Until
	// the application has anything, what comes before it, live or
	// archived, is dropped.
	joinSeq uint64
	join    archive.Pos
	joinGen uint64
	// joinTime is join time:T's T (zero for another join). Until the
	// application has anything, what of a session the join asked for,
	// where the archive does not say, is judged by timeFirst.
	joinTime time.Time
	// prior and priorEnd are what the archive holds of the feed before
	// join time:T (archiveBatch.prior): a record of the session of the
	// first record at or after T says the recorder had it before T.
	prior    archive.Pos
	priorEnd bool

	replaying bool
	gen       uint64
	want      archive.Pos // where this replay was asked to start
	first     bool        // no record of this replay was handled yet
	trimmed   bool        // this replay's start was deleted by the log
	failed    bool        // a read of the archive failed in this replay
	said      bool        // this replay's buffer overflow was logged
	cmd       *replayCmd
	stats     ArchiveStats

	// awaiting: the replay came to a record of a later session with no
	// live event held; the record would end the current session where
	// the archive's records of it stop, but the live events on their
	// way may say it went further (the archive lacks its tail). The
	// replay waits for one (awaitLive), ArchiveConfig.Wait at most
	// (awaitOver); waits counts the waits begun. awaited: this replay
	// waited in vain once (the live feed is silent): it waits no more,
	// and the sessions it ends while the live feed says nothing end
	// with an open Gap.
	awaiting, awaited bool
	waits             uint64
}

func newMerger(feed uint32, cfg *ArchiveConfig, log *slog.Logger) *merger {
	m := &merger{feed: feed, log: log, q: newEventQueue(cfg.Buffer, cfg.BufferBytes)}
	switch cfg.Join.kind {
	case joinEarliest:
		m.startReplay(archive.Earliest())
	case joinTime:
		m.startReplay(archive.AtTime(cfg.Join.time))
		m.joinTime = cfg.Join.time
	case joinSeq:
		m.startReplay(archive.Earliest())
		m.cmd.seq = cfg.Join.seq
		m.joinSeq, m.joinGen = cfg.Join.seq, m.gen
	}
	return m
}

// Stats returns the counters.
func (m *merger) Stats() ArchiveStats {
	s := m.stats
	s.Buffered = m.q.len()
	return s
}

// takeCommand returns the reader's next order, if there is one.
func (m *merger) takeCommand() (replayCmd, bool) {
	if m.cmd == nil {
		return replayCmd{}, false
	}
	c := *m.cmd
	m.cmd = nil
	return c, true
}

// live takes an event of the engine, valid only during the call. It
// reports whether the event goes to the application as it is; if not,
// the merger took what it needs of it.
func (m *merger) live(ev *transport.Event) bool {
	if ev.Kind == transport.EventStreamStart && !m.started && !ev.Start.Replaces.IsZero() {
		m.liveStart = ev.Start
	}
	m.liveSession = max(m.liveSession, sessionOf(ev))
	if m.replaying || m.q.len() > 0 || m.outAt < len(m.out) {
		if m.stale(ev) {
			return false
		}
		m.enqueue(ev)
		m.awaiting = false // a live event is held: it says what the archive lacks
		return false
	}
	switch m.apply(ev) {
	case actDeliver:
		return true
	case actBlock:
		m.enqueue(ev)
		m.startRegion(m.q.front())
	}
	return false
}

// pop returns the next event for the application (popInto).
func (m *merger) pop() (transport.Event, bool) {
	var ev transport.Event
	ok := m.popInto(&ev)
	return ev, ok
}

// popInto sets *dst to the next event for the application, if there is
// one: what the merger made, then the live events held, once no replay
// is under way. A message of the archive is copied once, from the
// reader's batch to dst.
func (m *merger) popInto(dst *transport.Event) bool {
	for {
		if m.outAt < len(m.out) {
			*dst = m.out[m.outAt]
			m.out[m.outAt] = transport.Event{}
			m.outAt++
			return true
		}
		m.out, m.outAt = m.out[:0], 0
		if m.pendAt < len(m.pend) && !m.awaiting {
			if ev := m.step(); ev != nil {
				*dst = *ev
				return true
			}
			continue
		}
		if m.replaying || m.q.len() == 0 {
			return false
		}
		ev := m.q.front()
		switch m.apply(ev) {
		case actDeliver:
			*dst = *ev
			m.popQueue()
			return true
		case actBlock:
			m.startRegion(ev)
		default:
			m.popQueue()
		}
	}
}

// apply delivers a live event that is next in line: what it adds to
// what the application has, if anything.
func (m *merger) apply(ev *transport.Event) action {
	switch ev.Kind {
	case transport.EventMessage:
		msg := &ev.Message
		switch s := msg.Stream.Session; {
		case m.beforeJoin(s, msg.Seq):
			return actDrop
		case m.past(s, msg.Seq):
			m.duplicate(ev)
			return actDrop
		case !m.started || s > m.cur.Session:
			m.switchTo(msg.Stream, msg.Seq, transport.StreamID{})
			m.out = append(m.out, copyEvent(ev))
			m.next, m.open = msg.Seq+1, true
			return actEmitted
		}
		m.next, m.open = msg.Seq+1, true
		return actDeliver
	case transport.EventGap:
		g := ev.Gap
		if m.beforeJoin(g.Stream.Session, g.To) {
			return actDrop
		}
		if m.past(g.Stream.Session, g.To) {
			m.duplicate(ev)
			return actDrop
		}
		if m.blocking(ev) {
			return actBlock
		}
		if !m.started || g.Stream.Session > m.cur.Session {
			m.switchTo(g.Stream, max(g.From, m.joinFirst(g.Stream.Session)), transport.StreamID{})
		} else if g.From >= m.next {
			m.next, m.open = g.To+1, false
			return actDeliver
		}
		m.emitGap(g.Stream, max(g.From, m.next), g.To, g.Reason, false)
		return actEmitted
	case transport.EventStreamStart:
		st := ev.Start
		if m.resumes(st.Stream) {
			// Resumed after an outage: it goes on after what the
			// application has of it.
			m.ended, m.idleEnded = false, false
			m.out = append(m.out, transport.Event{Kind: transport.EventStreamStart, Start: transport.StreamStart{
				Stream: m.cur, FirstSeq: m.next,
			}})
			return actEmitted
		}
		if m.beforeJoin(st.Stream.Session, st.FirstSeq) {
			// The history starts at N: the first event at or after it
			// starts the session there.
			return actDrop
		}
		if st.Stream.Session < m.cur.Session || m.started && st.Stream.Session == m.cur.Session {
			return actDrop
		}
		m.switchTo(st.Stream, st.FirstSeq, st.Replaces)
		return actEmitted
	case transport.EventStreamEnd:
		e := ev.End
		if e.Stream != m.cur || !m.started || m.ended {
			m.duplicate(ev)
			return actDrop
		}
		if m.blocking(ev) {
			return actBlock
		}
		m.endCur(e.Reason, e.LastSeq)
		return actEmitted
	}
	return actDrop
}

// past reports whether what ends at seq of session was delivered
// already, or is of a session over for the application.
func (m *merger) past(session, seq uint64) bool {
	return session < m.cur.Session || m.started && session == m.cur.Session && (m.ended || seq < m.next)
}

// behind reports whether the application has every position a live
// event held stands for, or its session is over for it: the archive
// delivered what it says.
func (m *merger) behind(ev *transport.Event) bool {
	switch ev.Kind {
	case transport.EventMessage:
		return m.past(ev.Message.Stream.Session, ev.Message.Seq)
	case transport.EventGap:
		return m.past(ev.Gap.Stream.Session, ev.Gap.To)
	case transport.EventStreamStart:
		return !m.resumes(ev.Start.Stream) && m.past(ev.Start.Stream.Session, ev.Start.FirstSeq)
	}
	s := ev.End.Stream.Session
	return s < m.cur.Session || m.started && s == m.cur.Session && m.ended
}

// beforeJoin reports whether position seq of session comes before
// where join seq:N starts the history, the application having nothing
// yet: N of the session the archive's reader found, or, when it found
// none (the archive held nothing), of whichever session comes.
func (m *merger) beforeJoin(session, seq uint64) bool {
	switch {
	case m.started || m.joinSeq == 0:
		return false
	case m.join.Session == 0:
		return seq < m.joinSeq
	}
	return archive.Pos{Session: session, Seq: seq}.Less(m.join)
}

// joinFirst is where the history starts in session, the application
// having nothing yet: join seq:N's N when it is of that session; else
// 0.
func (m *merger) joinFirst(session uint64) uint64 {
	if m.started || m.joinSeq == 0 || m.join.Session != 0 && m.join.Session != session {
		return 0
	}
	return m.joinSeq
}

// timeJoin reports whether join time:T starts the history, the
// application having nothing yet.
func (m *merger) timeJoin() bool { return !m.started && !m.joinTime.IsZero() }

// timeFirst is where join time:T's history starts in session, the
// archive having said nothing of it before position at, which was
// published at published (zero: unknown): at when that was before T
// (nothing before it was asked for); 1 when the session's publisher
// started at or after T (its number carries its start time:
// reliable.SessionStart), all of it being asked for; else unknown
// (known false): the session started before T, and which of its
// positions before at came at or after T nothing tells.
func (m *merger) timeFirst(session, at uint64, published time.Time) (first uint64, known bool) {
	switch {
	case !published.IsZero() && published.Before(m.joinTime):
		return at, true
	case !reliable.SessionStart(session).Before(m.joinTime):
		return 1, true
	}
	return 0, false
}

// heldTime is the publish time of the live message held at u, the
// first the replay reads up to (after its session's StreamStart, if
// held): zero when that is not a message.
func (m *merger) heldTime(u archive.Pos) time.Time {
	for i := m.lead; i < m.q.len(); i++ {
		switch ev := m.q.at(i); {
		case ev.Kind == transport.EventStreamStart && startOf(ev) == u:
		case ev.Kind == transport.EventMessage && startOf(ev) == u:
			return ev.Message.Time
		default:
			return time.Time{}
		}
	}
	return time.Time{}
}

// resumes reports whether a live StreamStart of s starts the current
// session again: it ended for silence, and its publisher was heard
// again.
func (m *merger) resumes(s transport.StreamID) bool {
	return m.started && m.ended && m.idleEnded && s == m.cur
}

// blocking reports whether the archive stands in for a live event: a
// Gap the archive may fill, the end of a session that did not close
// (the archive may hold its tail).
func (m *merger) blocking(ev *transport.Event) bool {
	switch ev.Kind {
	case transport.EventGap:
		switch ev.Gap.Reason {
		case transport.GapUnrecoverable, transport.GapOutpaced, transport.GapTimeout, transport.GapOverflow, transport.GapStreamEnded:
			return true
		}
	case transport.EventStreamEnd:
		return ev.End.Reason != transport.EndClosed
	}
	return false
}

// startRegion starts the replay a blocking event at the queue's front
// needs: from the gap's first position, or after the last position
// delivered of the session that ended.
func (m *merger) startRegion(ev *transport.Event) {
	if ev.Kind == transport.EventGap {
		g := ev.Gap
		from := g.From
		if m.started && g.Stream.Session == m.cur.Session {
			// The engine accounted for everything before the gap: what
			// lies between is fragments of the last message.
			from = max(from, m.next)
			m.next, m.open = from, false
		}
		from = max(from, m.joinFirst(g.Stream.Session))
		m.startReplay(archive.At(posOf(g.Stream, from)))
		return
	}
	m.startReplay(archive.At(posOf(m.cur, m.next)))
}

func (m *merger) startReplay(start archive.Start) {
	m.readPast()
	m.gen++
	m.replaying, m.first, m.failed, m.said = true, true, false, false
	m.awaiting, m.awaited = false, false
	m.want, m.trimmed = archive.Pos{}, false
	m.cmd = &replayCmd{gen: m.gen, start: start}
	m.stats.Replays++
}

func (m *merger) stopReplay() {
	m.gen++
	m.replaying, m.awaiting = false, false
	m.cmd = &replayCmd{gen: m.gen, stop: true}
}

// archive takes a batch of the archive's reader. Its events are merged
// as the application takes them (pop); a batch still pending is merged
// first, whole: the driver hands none while one is pending (popInto
// merges it to its end before it has nothing to return) or the replay
// waits for a live event (awaiting), so one handed then ends the wait.
func (m *merger) archive(b *archiveBatch) {
	for m.pendAt < len(m.pend) {
		m.awaitOver()
		if ev := m.step(); ev != nil {
			m.out = append(m.out, *ev)
		}
	}
	if b.gen != m.gen || !m.replaying {
		m.spent = b.events
		return
	}
	if b.seeked {
		m.want, m.trimmed, m.first = b.want, b.trimmed, true
		if b.gen == m.joinGen {
			m.join = b.want
		}
		if m.timeJoin() {
			m.prior, m.priorEnd = b.prior, b.priorEnd
		}
	}
	if b.deleted {
		// What lies between the last record and the next is lost to
		// retention, though the last was a message, which may stand
		// for further positions (fragments).
		m.trimmed, m.first, m.open = true, true, false
	}
	if b.err != nil {
		// A read that failed is tried again; the archive is given up
		// on when it stays so for Wait (idle).
		m.stats.Errors++
		m.failed = m.failed || b.idle
	}
	m.pend, m.pendAt, m.pendIdle = b.events, 0, b.idle
	if len(m.pend) == 0 {
		m.endPending()
	}
}

// step merges the next event of the pending batch. It returns the
// event when it is a message the application takes as it is, next;
// what else the merger made is in out. Once the replay has merged, the
// rest of the batch is dropped: it is the live feed's.
func (m *merger) step() *transport.Event {
	ev := &m.pend[m.pendAt]
	if m.awaitLive(ev) {
		return nil
	}
	m.pendAt++
	deliver := m.record(ev)
	if deliver && m.outAt < len(m.out) {
		m.out, deliver = append(m.out, *ev), false
	}
	if m.pendAt == len(m.pend) || !m.replaying {
		m.endPending() // after ev: what giving up adds comes after it
	}
	if deliver {
		return ev
	}
	return nil
}

// awaitLive reports whether the replay must wait, at the archive's
// record ev, for a live event (awaiting): ev is of a session after the
// current one, which would end it where the archive's records of it
// stop, and no live event is held to say whether it went further — the
// subscriber's engine, if it had the session, ends it before it starts
// the next, and its events may be on their way. Once one is held, the
// record ends the session as they say (settleHeld, endHeld); if they
// are of a later session, the engine never had the current one, and
// its end is where the archive's records stop. A live event of the
// current session at a position delivered already (the engine lags)
// says nothing of where it ended: it is dropped (stale), and the wait
// goes on.
func (m *merger) awaitLive(ev *transport.Event) bool {
	if !m.replaying || m.awaited || !m.started || m.ended || m.q.len() > 0 {
		return false
	}
	if ev.Kind == transport.EventStreamEnd {
		return false // an end marker says where a session ended (recordEnd)
	}
	s := ev.Message.Stream.Session
	if ev.Kind == transport.EventGap {
		s = ev.Gap.Stream.Session
	}
	if s <= m.cur.Session {
		return false
	}
	if !m.awaiting {
		m.awaiting = true
		m.waits++
	}
	return true
}

// awaitOver ends a wait for a live event (awaiting) that no live event
// ended within ArchiveConfig.Wait: the live feed is silent, and the
// replay goes on. Where the session ended is unknown: it ends after
// the archive's last record of it, with an open Gap for its tail
// (endHeld); live events of the tail that come later are dropped, and
// counted (lateLive).
func (m *merger) awaitOver() {
	if m.awaiting {
		m.awaiting, m.awaited = false, true
	}
}

// endPending is the end of the pending batch: the archive is given up
// on if it said it was idle and the replay is still under way.
func (m *merger) endPending() {
	idle := m.pendIdle
	m.spent, m.pend, m.pendAt, m.pendIdle = m.pend[:0], nil, 0, false
	if idle && m.replaying {
		m.giveUp()
	}
}

// takeSpent returns the events slice of a batch merged, for the reader
// to reuse, if there is one: the merger holds nothing of it.
func (m *merger) takeSpent() []transport.Event {
	s := m.spent
	m.spent = nil
	return s
}

// record takes one event of the archive. It reports whether it is a
// message to deliver as it is, after what it added to out.
func (m *merger) record(ev *transport.Event) bool {
	if ev.Kind == transport.EventStreamEnd {
		m.recordEnd(&ev.End)
		return false
	}
	s, from, to := ev.Message.Stream, ev.Message.Seq, ev.Message.Seq
	isGap := ev.Kind == transport.EventGap
	if isGap {
		s, from, to = ev.Gap.Stream, ev.Gap.From, ev.Gap.To
	}
	if m.beforeJoin(s.Session, to) || !m.started && m.want.Seq > 0 && posOf(s, to).Less(m.want) {
		// Before where the history was asked to start: join seq:N
		// whose reader, N not yet archived, waited at the log's end
		// for the records the recorder appends next.
		return false
	}
	first := m.first
	m.first = false
	switch {
	case m.past(s.Session, to):
		if !isGap {
			m.stats.Duplicates++
		}
		return false
	case m.reached(posOf(s, from)):
		if m.started && !m.ended && s.Session > m.cur.Session {
			// The archive has no more of the current session: what
			// the live events the replay read past say of it stands,
			// and what lies between them and the rest held is missing.
			m.settleHeld(transport.GapNotArchived)
			m.open = false
		}
		m.merge(transport.GapNotArchived)
		return false
	}
	unknown := false // where join time:T falls before from is unknown
	if !m.started || s.Session > m.cur.Session {
		start := from
		switch {
		case m.want.Session == s.Session && m.want.Seq > 0:
			start = m.want.Seq
		case m.started:
			start = 1 // a session after one delivered: wanted whole
		case first && m.trimmed && m.timeJoin() && from > 1:
			// The log deleted what came before where T fell, or after:
			// what of it was published at or after T was wanted.
			var known bool
			if start, known = m.timeFirst(s.Session, from, ev.Message.Time); !known {
				start, unknown = from-1, true
			}
		case first && m.timeJoin() && from > 1 && !reliable.SessionStart(s.Session).Before(m.joinTime):
			// The log deleted nothing, but its first record at or after
			// T is past the session's start, which was at or after T:
			// the positions before it, all asked for, were never
			// recorded.
			start = 1
		case first && m.timeJoin() && from > 1 && m.prior.Session != s.Session:
			// The log deleted nothing, and holds no record of the
			// session, which started before T, before its first where
			// the seek to T landed: the recorder joined it late. Which
			// of the positions before were published at or after T is
			// unknown, unless that record was published before T (the
			// log finds records by time to the millisecond): nothing
			// before it was asked for.
			var known bool
			if start, known = m.timeFirst(s.Session, from, ev.Message.Time); !known {
				start, unknown = from-1, true
			}
		}
		if m.started && !m.ended {
			// The archive shows the current session over: what the
			// live events held say it had beyond, the archive lacks.
			why := transport.GapNotArchived
			if first && m.trimmed {
				why = transport.GapRetention
			}
			m.endHeld(why)
		}
		m.switchTo(s, start, transport.StreamID{})
	}
	if from > m.next && !m.open {
		why := transport.GapNotArchived
		switch {
		case unknown:
			why = transport.GapStartUnknown
		case first && m.trimmed:
			why = transport.GapRetention
		}
		m.emitGap(s, m.next, from-1, why, true)
	}
	if !isGap {
		m.next, m.open = from+1, true
		m.stats.FromArchive++
		return true
	}
	lo, hi := max(from, m.next), to
	kind, u := m.until()
	if kind == untilPos && u.Session == s.Session && u.Seq <= hi {
		hi = u.Seq - 1 // the live feed has the rest
	}
	if lo <= hi {
		m.emitGap(s, lo, hi, ev.Gap.Reason, true)
	}
	if hi < to {
		m.merge(transport.GapNotArchived)
	}
	return false
}

// recordEnd takes an end marker of the archive: the publisher of
// session e.Stream closed it after e.LastSeq (the recorder wrote its
// StreamEnd). The current session ends there at once, with the
// publisher's reason: the archive says where it ended, so the replay
// need not wait for the live feed to say so (awaitLive), nor report an
// open Gap for a tail it might have had. What the live events the
// replay read past say of it stands (settleHeld); positions up to
// e.LastSeq not delivered, after a gap, the archive lacks (after a
// message, they are its fragments). When the live events held end with
// the session's own end, they take over. An end of another session, or
// of one ended already, says nothing more.
func (m *merger) recordEnd(e *transport.StreamEnd) {
	s := e.Stream
	if !m.started || m.ended || s != m.cur || m.beforeJoin(s.Session, e.LastSeq) {
		return
	}
	m.first = false
	if m.reached(posOf(s, e.LastSeq)) {
		m.merge(transport.GapNotArchived)
		return
	}
	m.settleHeld(transport.GapNotArchived)
	if e.LastSeq >= m.next && !m.open {
		m.emitGap(s, m.next, e.LastSeq, transport.GapNotArchived, true)
	}
	m.endCur(e.Reason, e.LastSeq)
	m.stats.Ends++
	if kind, u := m.until(); kind == untilSession && u.Session == s.Session {
		m.merge(transport.GapNotArchived)
	}
}

// until is how far the replay reads: up to the first live event held
// that the archive does not stand in for; else to the end of the last
// one it stands for; else on.
func (m *merger) until() (untilKind, archive.Pos) {
	if m.lead < m.q.len() {
		return untilPos, startOf(m.q.at(m.lead))
	}
	if m.q.len() == 0 {
		return untilNone, archive.Pos{}
	}
	b := m.q.back()
	if b.Kind == transport.EventGap {
		return untilPos, posOf(b.Gap.Stream, b.Gap.To+1)
	}
	return untilSession, posOf(b.End.Stream, 0)
}

// reached reports whether the archive, at p, has come to the live
// events held.
func (m *merger) reached(p archive.Pos) bool {
	switch kind, u := m.until(); kind {
	case untilPos:
		return !p.Less(u)
	case untilSession:
		return p.Session > u.Session
	}
	return false
}

// merge ends the replay: the live events held take over. A session the
// archive has shown to be over (a later one follows it) ends first; why
// is the reason for what of it the archive lacked.
func (m *merger) merge(why transport.GapReason) {
	kind, u := m.until()
	if m.started && !m.ended && kind == untilPos && u.Session == m.cur.Session && m.next < u.Seq {
		// The archive went past where the live events held take over
		// without what lies between: the last message's further
		// fragments, if it was one, else missing. (Left to the held
		// losses, they would start the same replay again.)
		switch {
		case m.next >= u.Seq:
		case m.open:
			m.next = u.Seq
		default:
			m.emitGap(m.cur, m.next, u.Seq-1, why, true)
		}
	}
	if m.started && !m.ended && (kind == untilSession && u.Session == m.cur.Session || kind == untilPos && u.Session > m.cur.Session) {
		m.endHeld(why)
	}
	m.stopReplay()
	m.stats.Merges++
}

// readPast makes the replay read past every live event held up to the
// last one the archive stands in for: those between are the archive's
// too, and going back to them, to start another replay at the next loss
// (a dead session's tail, many holes under heavy loss), would cost a
// seek of the archive each.
func (m *merger) readPast() {
	for i := m.q.len() - 1; i >= m.lead; i-- {
		if m.blocking(m.q.at(i)) {
			m.lead = i + 1
			return
		}
	}
}

// readPastLosses narrows what the replay reads past to the live events
// the archive stands in for at the queue's front: when it has nothing
// more, the live events held after them are delivered as they are.
func (m *merger) readPastLosses() {
	m.lead = 0
	for m.lead < m.q.len() && m.blocking(m.q.at(m.lead)) {
		m.lead++
	}
}

// giveUp: the archive had nothing more for a while. What the live
// events held start after is reported missing, and they take over; a
// late joiner's history with nothing held goes on. The held events the
// archive delivered already are dropped first: one of a session the
// archive went past (the replay reached the next session, then lagged)
// would otherwise measure the loss in the wrong session; and if they
// were all it held, the live feed takes over.
func (m *merger) giveUp() {
	caught := false
	for m.q.len() > 0 && m.behind(m.q.front()) {
		m.dropFront()
		caught = true
	}
	m.readPastLosses()
	kind, u := m.until()
	if kind == untilNone {
		if caught {
			m.merge(transport.GapNotArchived)
		}
		return
	}
	m.stats.GaveUp++
	why := transport.GapNotArchived
	if m.failed {
		// The archive could not be read: say why the engine gave up.
		for i := range m.lead {
			if ev := m.q.at(i); ev.Kind == transport.EventGap {
				why = ev.Gap.Reason
				break
			}
		}
	}
	switch {
	case kind == untilSession:
	case !m.started || u.Session > m.cur.Session:
		if m.started && !m.ended {
			m.endHeld(why)
		}
		first, known := uint64(1), true
		if n := m.joinFirst(u.Session); n > 0 {
			// join seq:N: the history starts there; live events before
			// it are dropped (beforeJoin).
			first = n
		} else if m.timeJoin() {
			// join time:T: the archive did not say where T falls.
			first, known = m.timeFirst(u.Session, u.Seq, m.heldTime(u))
		}
		s := transport.StreamID{Feed: m.feed, Session: u.Session}
		switch {
		case !known && u.Seq > 1:
			m.switchTo(s, u.Seq-1, transport.StreamID{})
			m.emitGap(s, u.Seq-1, u.Seq-1, transport.GapStartUnknown, true)
		case known && first < u.Seq:
			m.switchTo(s, first, transport.StreamID{})
			m.emitGap(s, first, u.Seq-1, why, true)
		}
	case m.next < u.Seq:
		m.emitGap(m.cur, m.next, u.Seq-1, why, true)
	}
	m.merge(why)
}

// endHeld ends the current session, which the archive, or the live
// events held, show to be over: what the live events held say of it
// first (settleHeld), then what lies after the last of them up to the
// end the engine said, reported missing for why, with the engine's
// reason. When the live events said nothing of its end, it ends where
// the application's positions of it stop (EndReplaced): if they showed
// a later session, the session was over before the subscriber heard
// the feed, and the archive alone tells it, as it tells a history;
// else the live feed said nothing since the replay waited for it in
// vain (ArchiveConfig.Wait), or its events of the session lag behind
// the archive, and where the session ended is unknown: its tail, if it
// had one, is in an open Gap (openGap).
func (m *merger) endHeld(why transport.GapReason) {
	m.settleHeld(why)
	if !m.endKnown {
		if m.liveSession <= m.cur.Session {
			m.openGap(why)
		}
		m.endCur(transport.EndReplaced, 0)
		return
	}
	if m.endLast >= m.next {
		m.emitGap(m.cur, m.next, m.endLast, why, true)
	}
	m.endCur(m.endWhy, m.endLast)
}

// openGap reports the current session's positions from next on
// missing, to its end, which nothing said (transport.Gap.Open), and
// remembers where it starts: live events inside it that come later are
// counted (lateLive).
func (m *merger) openGap(why transport.GapReason) {
	m.out = append(m.out, transport.Event{Kind: transport.EventGap, Gap: transport.Gap{
		Stream: m.cur, From: m.next, To: m.next, Reason: why, Open: true,
	}})
	m.stats.ArchiveGaps++
	m.stats.OpenGaps++
	m.openEnd, m.saidLate = posOf(m.cur, m.next), false
	m.open = false
}

// lateLive reports whether a live event is inside the last open Gap
// (openGap), and counts it: its session is over for the application,
// which was told its tail was missing; the first is logged.
func (m *merger) lateLive(ev *transport.Event) bool {
	last, ok := lastOf(ev)
	if !ok {
		last = startOf(ev) // a StreamStart
	}
	if m.openEnd.Session == 0 || last.Session != m.openEnd.Session || last.Seq < m.openEnd.Seq {
		return false
	}
	m.stats.LateLive++
	if !m.saidLate {
		m.saidLate = true
		m.log.Warn("multicast: live events of a session came after it was ended where the archive's records of it stop (nothing of the live feed had said where it ended within the archive's Wait): dropped, their positions stay in the open gap reported",
			"stream", transport.StreamID{Feed: m.feed, Session: last.Session}, "gap_from", m.openEnd.Seq, "event", ev.Kind, "seq", last.Seq)
	}
	return true
}

// stale reports whether a live event that would be held is of no use,
// and counts it (dropPast): one of a session over for the application,
// or, while the replay waits for the live feed (awaiting), one of the
// current session at positions the application has, which does not say
// where it ended. Held, an older session's event would stop the replay
// at once (every record reaches it), and the live events after it
// would then skip what the replay had yet to read.
func (m *merger) stale(ev *transport.Event) bool {
	switch s := sessionOf(ev); {
	case !m.started:
		return false
	case s < m.cur.Session:
	case m.awaiting && s == m.cur.Session && m.behind(ev):
	default:
		return false
	}
	m.dropPast(ev)
	return true
}

// settleHeld accounts for what the live events the replay reads past
// stand for of the current session beyond what was delivered, when the
// archive has no more of it: their messages are delivered, the rest
// (the positions the live events dropped from the queue stood for, the
// engine's losses, and what lies between, though it may be the last
// message's fragments) reported missing, for why. A StreamEnd of the
// session among them (held, or dropped from the queue) says where it
// ended (endKnown).
func (m *merger) settleHeld(why transport.GapReason) {
	for len(m.dropped) > 0 && m.dropped[0].Session <= m.cur.Session {
		// Dropped from the queue's front: before those held.
		d := m.dropped[0]
		if d.Session == m.cur.Session && d.Seq >= m.next {
			m.emitGap(m.cur, m.next, d.Seq, why, true)
		}
		if d.end && d.Session == m.cur.Session {
			m.endKnown, m.endLast, m.endWhy = true, d.Seq, transport.EndReplaced
		}
		m.dropped = m.dropped[1:]
	}
	settled := m.settled
	for i := range m.lead {
		ev := m.q.at(i)
		switch {
		case ev.Kind == transport.EventMessage && ev.Message.Stream == m.cur && ev.Message.Seq >= m.next:
			if seq := ev.Message.Seq; seq > m.next {
				m.emitGap(m.cur, m.next, seq-1, why, true)
			}
			m.out = append(m.out, *ev) // the queue's copy: dropped from it, not counted (settled)
			m.next, m.open = ev.Message.Seq+1, true
		case ev.Kind == transport.EventMessage && i >= m.settled && ev.Message.Stream.Session <= m.cur.Session:
			m.dropPast(ev) // the archive delivered it
		case ev.Kind == transport.EventGap && ev.Gap.Stream == m.cur && ev.Gap.To >= m.next:
			m.emitGap(m.cur, m.next, ev.Gap.To, why, true)
		case ev.Kind == transport.EventStreamEnd && ev.End.Stream == m.cur:
			m.endKnown, m.endLast, m.endWhy = true, ev.End.LastSeq, ev.End.Reason
		}
		if sessionOf(ev) <= m.cur.Session {
			settled = i + 1
		}
	}
	m.settled = max(m.settled, settled)
}

// switchTo starts session s at first, ending the current one first.
func (m *merger) switchTo(s transport.StreamID, first uint64, replaces transport.StreamID) {
	if m.started && !m.ended {
		m.endCur(transport.EndReplaced, 0)
	}
	switch {
	case !m.cur.IsZero():
		replaces = m.cur
	case replaces.IsZero() && m.liveStart.Stream == s:
		replaces = m.liveStart.Replaces
	}
	if m.timeJoin() && !m.priorEnd && m.prior.Session != 0 && m.prior.Session == replaces.Session && m.prior.Session < s.Session && !reliable.SessionStart(s.Session).Before(m.joinTime) {
		// s started at or after T: replaces may have published at or
		// after T too (before, it had stopped before T).
		m.priorTail(replaces)
	}
	m.cur, m.started, m.ended, m.next, m.open = s, true, false, first, false
	m.idleEnded, m.endKnown, m.endLast = false, false, 0
	m.out = append(m.out, transport.Event{Kind: transport.EventStreamStart, Start: transport.StreamStart{
		Stream: s, Replaces: replaces, FirstSeq: first,
	}})
}

// priorTail reports, before join time:T's first session, which started
// at or after T, what the session it replaced, old, published after the
// archive's last record of it, before T (prior): perhaps messages at or
// after T, which neither the archive nor the live feed had. Where old
// ended is unknown: it starts after that record, its tail is in an open
// Gap (openGap), and it ends there, as a session does whose end the
// live feed never said (endHeld).
func (m *merger) priorTail(old transport.StreamID) {
	m.cur, m.started, m.ended, m.next, m.open = old, true, false, m.prior.Seq+1, false
	m.out = append(m.out, transport.Event{Kind: transport.EventStreamStart, Start: transport.StreamStart{
		Stream: old, FirstSeq: m.next,
	}})
	m.openGap(transport.GapNotArchived)
	m.endCur(transport.EndReplaced, 0)
}

// endCur ends the current session; its last position is what the
// engine said or what was delivered, whichever is later.
func (m *merger) endCur(why transport.EndReason, last uint64) {
	m.ended, m.idleEnded = true, why == transport.EndIdle
	m.out = append(m.out, transport.Event{Kind: transport.EventStreamEnd, End: transport.StreamEnd{
		Stream: m.cur, LastSeq: max(last, m.next-1), Reason: why,
	}})
}

// emitGap reports from..to of s missing, for why: one Gap with the
// one before it, if that one is not taken yet and ends just before for
// the same reason. A GapStartUnknown is never joined: each has To =
// From, which a joined one would not. (An open Gap is never the last:
// its StreamEnd follows it at once.)
func (m *merger) emitGap(s transport.StreamID, from, to uint64, why transport.GapReason, fromArchive bool) {
	m.next, m.open = to+1, false
	if n := len(m.out); n > m.outAt && why != transport.GapStartUnknown {
		if g := &m.out[n-1].Gap; m.out[n-1].Kind == transport.EventGap && g.Stream == s && g.Reason == why && g.To+1 == from {
			g.To = to
			return
		}
	}
	m.out = append(m.out, transport.Event{Kind: transport.EventGap, Gap: transport.Gap{Stream: s, From: from, To: to, Reason: why}})
	if fromArchive {
		m.stats.ArchiveGaps++
	}
}

// enqueue holds a copy of a live event. When the queue is full its
// oldest events are dropped: those the application has already (the
// archive delivered them, or settleHeld did) are no loss; for the
// others the archive stands in, so a replay reads on past them (one
// starts if none is under way).
func (m *merger) enqueue(ev *transport.Event) {
	size := eventSize(ev)
	dropped, from := false, archive.Pos{}
	for m.q.len() > 0 && m.q.full(size) {
		front := m.q.front()
		if m.settled > 0 || m.behind(front) {
			// The application has it already: nothing is lost.
			m.dropFront()
			continue
		}
		if !dropped {
			from = startOf(front)
		}
		if last, ok := lastOf(front); ok {
			m.noteDropped(last, front.Kind == transport.EventStreamEnd)
		}
		m.popQueue()
		m.stats.LiveDropped++
		dropped = true
	}
	m.q.push(ev)
	if m.blocking(ev) && (m.replaying || m.lead == m.q.len()-1) {
		m.lead = m.q.len()
	}
	if !dropped {
		return
	}
	if !m.replaying {
		if m.started && !m.ended {
			from = posOf(m.cur, m.next)
		}
		m.startReplay(archive.At(from))
	}
	if !m.said {
		m.said = true
		m.log.Warn("multicast: the live feed outruns the archive's replay: the oldest live events held are dropped and read from the archive instead; the switch to live waits until the replay catches up",
			"held", m.q.len(), "bytes", m.q.bytes)
	}
}

// maxDropped bounds the sessions whose dropped live events the merger
// remembers: beyond it (publishers restarting faster than a replay
// catches up) the oldest is forgotten, and the archive alone says where
// that session ended.
const maxDropped = 8

// droppedPos is the last position the live events dropped from the
// queue stood for of a session, and whether its StreamEnd was one.
type droppedPos struct {
	archive.Pos
	end bool
}

// noteDropped remembers that a live event dropped from the queue stood
// for p; end: it was the session's StreamEnd.
func (m *merger) noteDropped(p archive.Pos, end bool) {
	if n := len(m.dropped); n > 0 && m.dropped[n-1].Session == p.Session {
		d := &m.dropped[n-1]
		d.Seq, d.end = max(d.Seq, p.Seq), d.end || end
		return
	}
	if len(m.dropped) == maxDropped {
		m.dropped = m.dropped[1:]
	}
	m.dropped = append(m.dropped, droppedPos{p, end})
}

// duplicate counts the live event at the queue's front (or at hand,
// when the queue is empty) dropped as over for the application
// (dropPast), unless settleHeld accounted for it.
func (m *merger) duplicate(ev *transport.Event) {
	if m.settled == 0 {
		m.dropPast(ev)
	}
}

// dropPast counts a live event dropped as over for the application: one
// inside an open Gap came late (lateLive); else a message was received
// twice.
func (m *merger) dropPast(ev *transport.Event) {
	if !m.lateLive(ev) && ev.Kind == transport.EventMessage {
		m.stats.Duplicates++
	}
}

// dropFront drops the queue's front event, which the application has
// already (behind): a message counts as a duplicate.
func (m *merger) dropFront() {
	m.duplicate(m.q.front())
	m.popQueue()
}

// popQueue drops the queue's front event.
func (m *merger) popQueue() {
	m.q.pop()
	if m.settled > 0 {
		m.settled--
	}
	if m.lead > 0 {
		m.lead--
		return
	}
	for m.lead < m.q.len() && m.blocking(m.q.at(m.lead)) {
		m.lead++
	}
}

func posOf(s transport.StreamID, seq uint64) archive.Pos {
	return archive.Pos{Session: s.Session, Seq: seq}
}

// sessionOf is the session of a live event.
func sessionOf(ev *transport.Event) uint64 {
	switch ev.Kind {
	case transport.EventMessage:
		return ev.Message.Stream.Session
	case transport.EventGap:
		return ev.Gap.Stream.Session
	case transport.EventStreamStart:
		return ev.Start.Stream.Session
	}
	return ev.End.Stream.Session
}

// startOf is the first feed position a live event stands for.
func startOf(ev *transport.Event) archive.Pos {
	switch ev.Kind {
	case transport.EventMessage:
		return posOf(ev.Message.Stream, ev.Message.Seq)
	case transport.EventGap:
		return posOf(ev.Gap.Stream, ev.Gap.From)
	case transport.EventStreamStart:
		return posOf(ev.Start.Stream, ev.Start.FirstSeq)
	}
	return posOf(ev.End.Stream, ev.End.LastSeq+1)
}

// lastOf is the last feed position a live event stands for, if any (a
// StreamStart stands for none).
func lastOf(ev *transport.Event) (archive.Pos, bool) {
	switch ev.Kind {
	case transport.EventMessage:
		return posOf(ev.Message.Stream, ev.Message.Seq), true
	case transport.EventGap:
		return posOf(ev.Gap.Stream, ev.Gap.To), true
	case transport.EventStreamEnd:
		return posOf(ev.End.Stream, ev.End.LastSeq), true
	}
	return archive.Pos{}, false
}
