package multicast

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/archive"
)

// mergeRig drives a merger as a Subscriber does, without I/O: live
// events from the engine, batches from the archive's reader, and what
// the application receives.
type mergeRig struct {
	t    *testing.T
	m    *merger
	got  []transport.Event
	cmds []replayCmd
	cur  replayCmd // the reader's current order
	sent bool      // the reader sent its first batch since the order
}

func newMergeRig(t *testing.T, join Join, buffer int) *mergeRig {
	cfg := ArchiveConfig{URL: "logd://x/t", Join: join, Buffer: buffer}
	cfg.setDefaults()
	r := &mergeRig{t: t, m: newMerger(1, &cfg, slog.New(slog.DiscardHandler))}
	r.commands()
	return r
}

func (r *mergeRig) commands() {
	for {
		c, ok := r.m.takeCommand()
		if !ok {
			return
		}
		r.cmds = append(r.cmds, c)
		r.cur, r.sent = c, false
	}
}

// live hands the engine's events to the merger, then delivers.
func (r *mergeRig) live(evs ...transport.Event) {
	for i := range evs {
		if r.m.live(&evs[i]) {
			r.got = append(r.got, copyEvent(&evs[i]))
		}
		r.commands()
		r.drain()
	}
}

func (r *mergeRig) drain() {
	for {
		ev, ok := r.m.pop()
		r.commands()
		if !ok {
			return
		}
		r.got = append(r.got, copyEvent(&ev))
	}
}

// drainSome delivers at most n of the merger's events.
func (r *mergeRig) drainSome(n int) {
	for range n {
		ev, ok := r.m.pop()
		r.commands()
		if !ok {
			return
		}
		r.got = append(r.got, copyEvent(&ev))
	}
}

// arch hands the merger a batch of the archive's reader, read for the
// current order (which must be a start) from want.
func (r *mergeRig) arch(want archive.Pos, trimmed bool, evs ...transport.Event) {
	r.t.Helper()
	if r.cur.stop {
		r.t.Fatalf("archive batch while the reader is stopped; orders %+v", r.cmds)
	}
	r.m.archive(&archiveBatch{gen: r.cur.gen, events: evs, seeked: !r.sent, want: want, trimmed: trimmed})
	r.sent = true
	r.commands()
	r.drain()
}

// archAfter is arch for a replay that seeked to a time, the log's last
// record of the feed before where it landed being prior (zero: none),
// an end marker if end: the first batch of the order.
func (r *mergeRig) archAfter(prior archive.Pos, end bool, evs ...transport.Event) {
	r.t.Helper()
	if r.cur.stop || r.sent {
		r.t.Fatalf("a first batch after a seek, but the reader is stopped or sent one; orders %+v", r.cmds)
	}
	r.m.archive(&archiveBatch{gen: r.cur.gen, events: evs, seeked: true, prior: prior, priorEnd: end})
	r.sent = true
	r.commands()
	r.drain()
}

// idle tells the merger the reader had nothing more for a while.
func (r *mergeRig) idle(err error) {
	r.m.archive(&archiveBatch{gen: r.cur.gen, idle: true, err: err})
	r.commands()
	r.drain()
}

var (
	sA = transport.StreamID{Feed: 1, Session: 100}
	sB = transport.StreamID{Feed: 1, Session: 200}
)

func msg(s transport.StreamID, seq uint64) transport.Event {
	return transport.Event{Kind: transport.EventMessage, Message: transport.Message{Stream: s, Seq: seq, Payload: []byte(fmt.Sprint(seq))}}
}

func msgs(s transport.StreamID, from, to uint64) []transport.Event {
	var evs []transport.Event
	for seq := from; seq <= to; seq++ {
		evs = append(evs, msg(s, seq))
	}
	return evs
}

func gapEv(s transport.StreamID, from, to uint64, why transport.GapReason) transport.Event {
	return transport.Event{Kind: transport.EventGap, Gap: transport.Gap{Stream: s, From: from, To: to, Reason: why}}
}

func startEv(s, replaces transport.StreamID, first uint64) transport.Event {
	return transport.Event{Kind: transport.EventStreamStart, Start: transport.StreamStart{Stream: s, Replaces: replaces, FirstSeq: first}}
}

func endEv(s transport.StreamID, last uint64, why transport.EndReason) transport.Event {
	return transport.Event{Kind: transport.EventStreamEnd, End: transport.StreamEnd{Stream: s, LastSeq: last, Reason: why}}
}

// cat joins events and slices of events.
func cat(parts ...any) []transport.Event {
	var evs []transport.Event
	for _, p := range parts {
		switch p := p.(type) {
		case transport.Event:
			evs = append(evs, p)
		case []transport.Event:
			evs = append(evs, p...)
		}
	}
	return evs
}

// span is what a session must account for: positions first..last.
type span struct {
	s           transport.StreamID
	first, last uint64
}

// account checks the exact accounting of what the application got:
// sessions one after the other, each opened by a StreamStart at its
// first position and, if ended, closed by a StreamEnd; in between each
// position delivered once or inside one Gap, in order. An open Gap
// (transport.Gap.Open) covers the rest of its session, to the span's
// last position or past it, and is followed by the StreamEnd, which
// says the session's last position is the one before it. It returns
// the gaps.
func account(t *testing.T, got []transport.Event, want ...span) []transport.Gap {
	t.Helper()
	var gaps []transport.Gap
	i := 0
	for k, w := range want {
		if i >= len(got) || got[i].Kind != transport.EventStreamStart || got[i].Start.Stream != w.s || got[i].Start.FirstSeq != w.first {
			t.Fatalf("session %d: want StreamStart of %v at %d, got event %d of %d: %s", k, w.s, w.first, i, len(got), show(got))
		}
		i++
		next := w.first
		var open *transport.Gap
		isOpen := func(ev transport.Event) bool {
			if ev.Kind != transport.EventGap || !ev.Gap.Open {
				return false
			}
			if ev.Gap.Stream != w.s || ev.Gap.From != next || ev.Gap.To != ev.Gap.From || ev.Gap.Len() != 0 {
				t.Fatalf("open gap %v, want one of %v from %d, To = From, Len 0: %s", ev.Gap, w.s, next, show(got))
			}
			gaps = append(gaps, ev.Gap)
			open = &ev.Gap
			return true
		}
		for ; i < len(got) && next <= w.last; i++ {
			ev := got[i]
			if isOpen(ev) {
				next = w.last + 1
				continue
			}
			switch ev.Kind {
			case transport.EventMessage:
				if ev.Message.Stream != w.s || ev.Message.Seq != next {
					t.Fatalf("event %d: %v, want message %d of %v: %s", i, ev.Message.Seq, next, w.s, show(got))
				}
				next++
			case transport.EventGap:
				if ev.Gap.Stream != w.s || ev.Gap.From != next || ev.Gap.To < ev.Gap.From {
					t.Fatalf("event %d: %v, want a gap from %d: %s", i, ev.Gap, next, show(got))
				}
				gaps = append(gaps, ev.Gap)
				next = ev.Gap.To + 1
			default:
				t.Fatalf("event %d: %v inside session %v at %d: %s", i, ev.Kind, w.s, next, show(got))
			}
		}
		if open == nil && i < len(got) && isOpen(got[i]) {
			i++
		}
		if next != w.last+1 {
			t.Fatalf("session %v accounted up to %d, want %d: %s", w.s, next-1, w.last, show(got))
		}
		if open != nil && (i >= len(got) || got[i].Kind != transport.EventStreamEnd || got[i].End.Stream != w.s || got[i].End.LastSeq != open.From-1) {
			t.Fatalf("open gap %v not followed by the end of %v after %d: %s", *open, w.s, open.From-1, show(got))
		}
		if k+1 < len(want) {
			if i >= len(got) || got[i].Kind != transport.EventStreamEnd || got[i].End.Stream != w.s {
				t.Fatalf("session %v not ended before the next: %s", w.s, show(got))
			}
			i++
		} else if i < len(got) && got[i].Kind == transport.EventStreamEnd {
			i++
		}
	}
	if i != len(got) {
		t.Fatalf("%d events after the last session: %s", len(got)-i, show(got[i:]))
	}
	return gaps
}

// show lists events briefly.
func show(evs []transport.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		switch ev.Kind {
		case transport.EventMessage:
			fmt.Fprintf(&b, " m%d/%d", ev.Message.Stream.Session, ev.Message.Seq)
		case transport.EventGap:
			if ev.Gap.Open {
				fmt.Fprintf(&b, " gap%d/%d-?(%d)", ev.Gap.Stream.Session, ev.Gap.From, ev.Gap.Reason)
				break
			}
			fmt.Fprintf(&b, " gap%d/%d-%d(%d)", ev.Gap.Stream.Session, ev.Gap.From, ev.Gap.To, ev.Gap.Reason)
		case transport.EventStreamStart:
			fmt.Fprintf(&b, " start%d@%d(after %d)", ev.Start.Stream.Session, ev.Start.FirstSeq, ev.Start.Replaces.Session)
		case transport.EventStreamEnd:
			fmt.Fprintf(&b, " end%d@%d(%v)", ev.End.Stream.Session, ev.End.LastSeq, ev.End.Reason)
		}
	}
	return b.String()
}

// wantStats checks counters the test cares about (the others are 0 in
// want and ignored).
func wantStats(t *testing.T, got ArchiveStats, fromArchive, archiveGaps, merges uint64) {
	t.Helper()
	if got.FromArchive != fromArchive || got.ArchiveGaps != archiveGaps || got.Merges != merges {
		t.Errorf("stats %+v: want FromArchive %d, ArchiveGaps %d, Merges %d", got, fromArchive, archiveGaps, merges)
	}
}

// TestMergeLiveOnly: with nothing lost, every live event passes as it
// is and the archive is never read.
func TestMergeLiveOnly(t *testing.T) {
	r := newMergeRig(t, JoinLive(), 0)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 20), gapEv(sA, 21, 21, transport.GapTooLarge), msgs(sA, 22, 30), endEv(sA, 30, transport.EndClosed))...)
	if len(r.cmds) != 0 {
		t.Fatalf("orders to the reader %+v, want none", r.cmds)
	}
	account(t, r.got, span{sA, 1, 30})
}

// TestMergeRecovers: a loss the publisher could not repair is read from
// the archive — its messages, a gap marker it holds (with its reason),
// or, for what it lacks after a while, GapNotArchived — while the live
// events that follow wait; duplicates on both sides are dropped.
func TestMergeRecovers(t *testing.T) {
	for _, c := range []struct {
		name    string
		archive []transport.Event
		idle    bool
		gaps    []transport.Gap
	}{
		{"messages", msgs(sA, 9, 25), false, nil},
		{"marker", cat(msgs(sA, 11, 14), gapEv(sA, 15, 17, transport.GapSourceDown), msgs(sA, 18, 22)), false,
			[]transport.Gap{{Stream: sA, From: 15, To: 17, Reason: transport.GapSourceDown}}},
		{"marker reaching live", cat(msgs(sA, 11, 14), gapEv(sA, 15, 40, transport.GapOverflow)), false,
			[]transport.Gap{{Stream: sA, From: 15, To: 20, Reason: transport.GapOverflow}}},
		{"lacking", msgs(sA, 11, 13), true,
			[]transport.Gap{{Stream: sA, From: 14, To: 20, Reason: transport.GapNotArchived}}},
		{"hole", cat(msgs(sA, 11, 12), gapEv(sA, 13, 13, transport.GapTimeout), msgs(sA, 16, 21)), false,
			[]transport.Gap{{Stream: sA, From: 13, To: 13, Reason: transport.GapTimeout}, {Stream: sA, From: 14, To: 15, Reason: transport.GapNotArchived}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newMergeRig(t, JoinLive(), 0)
			r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 10), gapEv(sA, 11, 20, transport.GapUnrecoverable), msgs(sA, 21, 25))...)
			if len(r.cmds) != 1 || r.cmds[0].start.String() != archive.At(archive.Pos{Session: 100, Seq: 11}).String() {
				t.Fatalf("orders %+v: want a replay from 11", r.cmds)
			}
			r.arch(archive.Pos{Session: 100, Seq: 11}, false, c.archive...)
			if c.idle {
				r.idle(nil)
			}
			r.live(msgs(sA, 26, 30)...)
			gaps := account(t, r.got, span{sA, 1, 30})
			if fmt.Sprint(gaps) != fmt.Sprint(c.gaps) {
				t.Errorf("gaps %v, want %v", gaps, c.gaps)
			}
			if !r.cmds[len(r.cmds)-1].stop || r.m.replaying {
				t.Errorf("the replay did not stop: orders %+v", r.cmds)
			}
		})
	}
}

// TestMergeArchiveDown: when the archive cannot be read, a loss is
// reported with the engine's reason.
func TestMergeArchiveDown(t *testing.T) {
	r := newMergeRig(t, JoinLive(), 0)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 10), gapEv(sA, 11, 20, transport.GapTimeout), msgs(sA, 21, 25))...)
	r.idle(fmt.Errorf("connection refused"))
	gaps := account(t, r.got, span{sA, 1, 25})
	if len(gaps) != 1 || gaps[0].Reason != transport.GapTimeout || gaps[0].From != 11 || gaps[0].To != 20 {
		t.Errorf("gaps %v, want 11..20 timed out", gaps)
	}
	if s := r.m.Stats(); s.Errors != 1 || s.GaveUp != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestMergeRetention: a loss whose records the archive's retention
// deleted is reported as such.
func TestMergeRetention(t *testing.T) {
	r := newMergeRig(t, JoinLive(), 0)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 10), gapEv(sA, 11, 20, transport.GapUnrecoverable), msgs(sA, 21, 25))...)
	r.arch(archive.Pos{Session: 100, Seq: 11}, true, msgs(sA, 15, 21)...)
	gaps := account(t, r.got, span{sA, 1, 25})
	if len(gaps) != 1 || gaps[0] != (transport.Gap{Stream: sA, From: 11, To: 14, Reason: transport.GapRetention}) {
		t.Errorf("gaps %v, want 11..14 deleted by retention", gaps)
	}
}

// TestMergeLateJoin: a late joiner gets the archive's history — a
// session before the live one, then the live one's start — and switches
// to the live events held, which start where the archive reaches them.
func TestMergeLateJoin(t *testing.T) {
	r := newMergeRig(t, JoinEarliest(), 0)
	if len(r.cmds) != 1 || r.cmds[0].start.String() != "earliest" {
		t.Fatalf("orders %+v, want a replay from the earliest record", r.cmds)
	}
	r.live(cat(startEv(sB, sA, 100), msgs(sB, 100, 150))...)
	if len(r.got) != 0 {
		t.Fatalf("delivered before the history: %s", show(r.got))
	}
	r.arch(archive.Pos{}, false, cat(msgs(sA, 1, 50), msgs(sB, 1, 60))...)
	r.live(msgs(sB, 151, 160)...)
	r.arch(archive.Pos{}, false, msgs(sB, 61, 120)...)
	r.live(msgs(sB, 161, 170)...)
	account(t, r.got, span{sA, 1, 50}, span{sB, 1, 170})
	if r.got[52].Start.Replaces != sA {
		t.Errorf("the second session's start %+v does not say it replaced the first", r.got[52].Start)
	}
	wantStats(t, r.m.Stats(), 50+99, 0, 1)
}

// TestMergeJoinSeqAndTime: seq:N asks the reader for that position of
// the last session, and the history starts there, a gap first if the
// archive lacks it; time:T starts with what the archive finds (after a
// record of its session before T: where T falls is known).
func TestMergeJoinSeqAndTime(t *testing.T) {
	r := newMergeRig(t, JoinSeq(40), 0)
	if len(r.cmds) != 1 || r.cmds[0].seq != 40 {
		t.Fatalf("orders %+v, want one for seq 40", r.cmds)
	}
	r.live(cat(startEv(sB, sA, 100), msgs(sB, 100, 110))...)
	r.arch(archive.Pos{Session: 200, Seq: 40}, true, msgs(sB, 45, 100)...)
	gaps := account(t, r.got, span{sB, 40, 110})
	if len(gaps) != 1 || gaps[0] != (transport.Gap{Stream: sB, From: 40, To: 44, Reason: transport.GapRetention}) {
		t.Errorf("gaps %v, want 40..44 deleted by retention", gaps)
	}

	r = newMergeRig(t, JoinTime(time.Unix(1_700_000_000, 0)), 0)
	r.live(cat(startEv(sB, sA, 100), msgs(sB, 100, 110))...)
	r.archAfter(posOf(sB, 69), false, msgs(sB, 70, 101)...)
	account(t, r.got, span{sB, 70, 110})
}

// TestMergePublisherCrash: the publisher dies while the subscriber has
// a loss; the restarted publisher's session follows. The dead session
// is completed from the archive, up to its last record (past what the
// engine knew), ended, and the new session follows live.
func TestMergePublisherCrash(t *testing.T) {
	r := newMergeRig(t, JoinLive(), 0)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 39),
		gapEv(sA, 40, 45, transport.GapStreamEnded), endEv(sA, 45, transport.EndReplaced),
		startEv(sB, sA, 1), msgs(sB, 1, 5))...)
	r.arch(archive.Pos{Session: 100, Seq: 40}, false, cat(msgs(sA, 38, 60), msgs(sB, 1, 3))...)
	r.live(msgs(sB, 6, 10)...)
	account(t, r.got, span{sA, 1, 60}, span{sB, 1, 10})
	if e := r.got[61].End; e.LastSeq != 60 || e.Reason != transport.EndReplaced {
		t.Errorf("end of the dead session %+v, want at 60, replaced", e)
	}
	wantStats(t, r.m.Stats(), 21, 0, 1)
}

// TestMergeTail: a session that fell silent and was not replaced: its
// tail is read from the archive until it has nothing more, then it
// ends with the engine's reason.
func TestMergeTail(t *testing.T) {
	r := newMergeRig(t, JoinLive(), 0)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 50), endEv(sA, 50, transport.EndIdle))...)
	r.arch(archive.Pos{Session: 100, Seq: 51}, false, msgs(sA, 51, 55)...)
	r.idle(nil)
	account(t, r.got, span{sA, 1, 55})
	if e := r.got[len(r.got)-1]; e.Kind != transport.EventStreamEnd || e.End.LastSeq != 55 || e.End.Reason != transport.EndIdle {
		t.Errorf("last event %s, want the end at 55, idle", show(r.got[len(r.got)-1:]))
	}
	// A closed session needs no archive.
	r = newMergeRig(t, JoinLive(), 0)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 50), endEv(sA, 50, transport.EndClosed))...)
	if len(r.cmds) != 0 {
		t.Errorf("orders %+v for a closed session", r.cmds)
	}
}

// TestMergeResumesAfterIdleEnd: a session that fell silent longer than
// the engine's IdleTimeout (an outage) ended, its tail read from the
// archive; when its publisher is heard again the engine starts it again
// (a StreamStart of the same session, then a Gap for what it missed),
// and so does the merger: a new StreamStart after what the application
// has, then what it missed from the archive, then the live feed. Before,
// the resumed session was dropped as delivered already: deaf for good.
func TestMergeResumesAfterIdleEnd(t *testing.T) {
	r := newMergeRig(t, JoinLive(), 0)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 50), endEv(sA, 50, transport.EndIdle))...)
	r.arch(archive.Pos{Session: 100, Seq: 51}, false, msgs(sA, 51, 55)...)
	r.idle(nil)
	if n := len(r.got); n != 57 || r.got[n-1].Kind != transport.EventStreamEnd {
		t.Fatalf("before the publisher is heard again: %s", show(r.got))
	}
	r.live(cat(startEv(sA, transport.StreamID{}, 51), gapEv(sA, 51, 100, transport.GapTimeout), msgs(sA, 101, 110))...)
	if c := r.cmds[len(r.cmds)-1]; c.stop || c.start.String() != archive.At(archive.Pos{Session: 100, Seq: 56}).String() {
		t.Fatalf("orders %+v: want a replay from 56", r.cmds)
	}
	r.arch(archive.Pos{Session: 100, Seq: 56}, false, msgs(sA, 56, 104)...)
	r.live(msgs(sA, 111, 115)...)
	account(t, r.got[:56], span{sA, 1, 55})
	account(t, r.got[57:], span{sA, 56, 115})
}

// TestMergeOverflow: a buffer of 8 live events cannot hold what arrives
// while the archive is read: the oldest are dropped, the replay reads
// past them, and the switch waits until it catches up; nothing is lost.
func TestMergeOverflow(t *testing.T) {
	r := newMergeRig(t, JoinLive(), 8)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 10), gapEv(sA, 11, 20, transport.GapUnrecoverable))...)
	r.live(msgs(sA, 21, 40)...) // 21..32 dropped
	r.arch(archive.Pos{Session: 100, Seq: 11}, false, msgs(sA, 11, 30)...)
	r.live(msgs(sA, 41, 50)...) // 33..42 dropped
	r.arch(archive.Pos{Session: 100, Seq: 11}, false, msgs(sA, 31, 60)...)
	r.live(msgs(sA, 51, 55)...)
	account(t, r.got, span{sA, 1, 55})
	s := r.m.Stats()
	if s.LiveDropped != 23 || s.Merges != 1 || s.FromArchive != 32 {
		t.Errorf("stats %+v: want 23 live events dropped (the gap, 21..32, 33..42), 32 messages from the archive, one merge", s)
	}
	// An application slower than the feed: the live events held after a
	// merge overflow, and a replay from where it is starts again.
	r = newMergeRig(t, JoinLive(), 8)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 5), gapEv(sA, 6, 6, transport.GapUnrecoverable))...)
	r.live(msgs(sA, 7, 14)...)
	r.m.archive(&archiveBatch{gen: r.cur.gen, events: msgs(sA, 6, 7), seeked: true, want: archive.Pos{Session: 100, Seq: 6}})
	r.commands()
	// The application takes 6, 7 and 8, and then falls behind: 9..14
	// are held, and more arrive.
	for range 3 {
		ev, ok := r.m.pop()
		if !ok {
			t.Fatalf("nothing to deliver after %s", show(r.got))
		}
		r.got = append(r.got, copyEvent(&ev))
	}
	for _, ev := range msgs(sA, 15, 30) {
		r.m.live(&ev)
		r.commands()
	}
	if !r.m.replaying {
		t.Fatal("no replay after the held events overflowed")
	}
	r.arch(archive.Pos{Session: 100, Seq: 9}, false, msgs(sA, 9, 25)...)
	account(t, r.got, span{sA, 1, 30})
}

// TestMergeLiveGapsAfterJoin: a late joiner whose live events held
// include a loss: the replay reads on past it, the live events before
// it included, and switches to live after it, once.
func TestMergeLiveGapsAfterJoin(t *testing.T) {
	r := newMergeRig(t, JoinEarliest(), 0)
	r.live(cat(startEv(sB, transport.StreamID{}, 100), msgs(sB, 100, 110), gapEv(sB, 111, 115, transport.GapOverflow), msgs(sB, 116, 120))...)
	r.arch(archive.Pos{}, false, msgs(sB, 1, 100)...)
	if !r.m.replaying || len(r.cmds) != 1 {
		t.Fatalf("orders %+v: want the history read on", r.cmds)
	}
	r.arch(archive.Pos{}, false, msgs(sB, 101, 117)...)
	account(t, r.got, span{sB, 1, 120})
	wantStats(t, r.m.Stats(), 115, 0, 1)
}

// TestMergeDeadSessionTail: a session that ended with many holes in its
// tail (the subscriber lossy and behind when its publisher died), each
// a Gap of the engine, then a new session: one replay reads the whole
// tail, past the live messages between the holes, and ends the session
// where the archive shows the next one.
func TestMergeDeadSessionTail(t *testing.T) {
	r := newMergeRig(t, JoinLive(), 0)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 10))...)
	var tail []transport.Event
	for from := uint64(11); from < 1000; from += 10 {
		tail = append(tail, gapEv(sA, from, from+4, transport.GapStreamEnded))
		tail = append(tail, msgs(sA, from+5, from+9)...)
	}
	tail = append(tail, endEv(sA, 1000, transport.EndReplaced), startEv(sB, sA, 1))
	tail = append(tail, msgs(sB, 1, 5)...)
	r.live(tail...)
	r.arch(archive.Pos{Session: 100, Seq: 11}, false, msgs(sA, 11, 1000)...)
	r.arch(archive.Pos{Session: 100, Seq: 11}, false, msgs(sB, 1, 2)...)
	account(t, r.got, span{sA, 1, 1000}, span{sB, 1, 5})
	if st := r.m.Stats(); st.Replays != 1 || st.Merges != 1 || st.FromArchive != 990 {
		t.Fatalf("stats %+v: want one replay of the 990 messages of the tail", st)
	}
}

// TestMergeEmptyArchive: a late joiner whose archive has nothing
// reports what the live feed began after as lost, then goes live.
func TestMergeEmptyArchive(t *testing.T) {
	r := newMergeRig(t, JoinEarliest(), 0)
	r.idle(nil) // nothing held yet: the history goes on
	if !r.m.replaying || len(r.got) != 0 {
		t.Fatalf("gave up with nothing held: %s", show(r.got))
	}
	r.live(cat(startEv(sB, transport.StreamID{}, 100), msgs(sB, 100, 110))...)
	r.idle(nil)
	gaps := account(t, r.got, span{sB, 1, 110})
	if len(gaps) != 1 || gaps[0] != (transport.Gap{Stream: sB, From: 1, To: 99, Reason: transport.GapNotArchived}) {
		t.Errorf("gaps %v, want 1..99 not archived", gaps)
	}
}

// TestMergeStaleBatches: batches of a replay that was stopped are
// ignored.
func TestMergeStaleBatches(t *testing.T) {
	r := newMergeRig(t, JoinLive(), 0)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 10), gapEv(sA, 11, 12, transport.GapUnrecoverable), msgs(sA, 13, 15))...)
	old := r.cur
	r.arch(archive.Pos{Session: 100, Seq: 11}, false, msgs(sA, 11, 13)...)
	r.m.archive(&archiveBatch{gen: old.gen, events: msgs(sA, 11, 14)})
	r.drain()
	account(t, r.got, span{sA, 1, 15})
}

// TestMergeOutpaced: a loss the engine reports as outpaced (the
// publisher, without flow control, moved its window past it) is read
// from the archive like any other it gave up on.
func TestMergeOutpaced(t *testing.T) {
	r := newMergeRig(t, JoinLive(), 0)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 10), gapEv(sA, 11, 20, transport.GapOutpaced), msgs(sA, 21, 25))...)
	r.arch(archive.Pos{Session: 100, Seq: 11}, false, msgs(sA, 11, 21)...)
	account(t, r.got, span{sA, 1, 25})
	wantStats(t, r.m.Stats(), 10, 0, 1)
}

// TestMergeGiveUpAfterSessionSwitch: the archive, lagging behind the
// live feed, replays the rest of a dead session and the start of the
// next, then has nothing more. The live events held of the dead session
// were delivered by the archive: the loss reported is only what neither
// side has of the new session, and its live messages are delivered.
func TestMergeGiveUpAfterSessionSwitch(t *testing.T) {
	r := newMergeRig(t, JoinLive(), 0)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 10),
		gapEv(sA, 11, 12, transport.GapUnrecoverable), msgs(sA, 13, 15),
		gapEv(sA, 16, 20, transport.GapStreamEnded), endEv(sA, 20, transport.EndReplaced),
		startEv(sB, sA, 1), gapEv(sB, 1, 2, transport.GapUnrecoverable), msgs(sB, 3, 10))...)
	r.arch(archive.Pos{Session: 100, Seq: 11}, false, cat(msgs(sA, 11, 20), msgs(sB, 1, 1))...)
	r.idle(nil) // the recorder has not written B 2.. yet
	r.live(msgs(sB, 11, 14)...)
	gaps := account(t, r.got, span{sA, 1, 20}, span{sB, 1, 14})
	if len(gaps) != 1 || gaps[0] != (transport.Gap{Stream: sB, From: 2, To: 2, Reason: transport.GapNotArchived}) {
		t.Errorf("gaps %v, want only B 2..2 not archived", gaps)
	}
	if r.m.replaying {
		t.Error("still replaying")
	}
}

// TestMergeGiveUpDeadTail: the archive, lagging, has nothing more of a
// dead session's tail: what the engine said the session held beyond
// what was delivered — its held Gap and StreamEnd, or, with a small
// buffer, the live events dropped — is reported missing before the
// session ends at the engine's last position.
func TestMergeGiveUpDeadTail(t *testing.T) {
	for _, buffer := range []int{0, 4} {
		t.Run(fmt.Sprint("buffer ", buffer), func(t *testing.T) {
			r := newMergeRig(t, JoinLive(), buffer)
			r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 30),
				gapEv(sA, 31, 33, transport.GapStreamEnded), endEv(sA, 33, transport.EndReplaced),
				startEv(sB, sA, 1), msgs(sB, 1, 10))...)
			r.arch(archive.Pos{Session: 100, Seq: 31}, false, msgs(sA, 31, 31)...)
			r.idle(nil)
			r.live(msgs(sB, 11, 12)...)
			gaps := account(t, r.got, span{sA, 1, 33}, span{sB, 1, 12})
			if len(gaps) == 0 || gaps[0] != (transport.Gap{Stream: sA, From: 32, To: 33, Reason: transport.GapNotArchived}) {
				t.Errorf("gaps %v, want A 32..33 not archived first", gaps)
			}
			for _, ev := range r.got {
				if ev.Kind == transport.EventStreamEnd && ev.End.LastSeq != 33 {
					t.Errorf("A ends at %d, want 33", ev.End.LastSeq)
				}
			}
		})
	}
}

// TestMergeGiveUpCaughtUp: a late joiner's replay delivered everything
// the live events held stand for, then the archive has nothing more:
// the subscriber goes live, not waiting on the archive for the next.
func TestMergeGiveUpCaughtUp(t *testing.T) {
	r := newMergeRig(t, JoinEarliest(), 0)
	r.live(cat(startEv(sA, transport.StreamID{}, 3), msgs(sA, 3, 5), gapEv(sA, 6, 7, transport.GapUnrecoverable))...)
	r.arch(archive.Pos{}, false, msgs(sA, 1, 7)...)
	r.idle(nil)
	if r.m.replaying || r.m.Stats().Merges != 1 {
		t.Fatalf("still replaying after the archive delivered all that is held; stats %+v", r.m.Stats())
	}
	r.live(msgs(sA, 8, 10)...)
	account(t, r.got, span{sA, 1, 10})
}

// TestMergeSpentAfterCopy: the events slice of an archive batch goes back
// to the reader (takeSpent) only once every event of it was copied out
// (popInto, or the merger's own output): the reader, refilling it at
// once, overwrites none that the application has yet to get.
func TestMergeSpentAfterCopy(t *testing.T) {
	r := newMergeRig(t, JoinEarliest(), 0)
	r.live(cat(startEv(sB, sA, 100), msgs(sB, 100, 110))...)
	var got []transport.Event
	scribble := func() {
		spent := r.m.takeSpent()
		spent = spent[:cap(spent)]
		for i := range spent {
			spent[i] = msg(sA, 999_999) // the reader's next read
		}
	}
	for _, evs := range [][]transport.Event{cat(msgs(sA, 1, 50), msgs(sB, 1, 40)), msgs(sB, 41, 105)} {
		r.m.archive(&archiveBatch{gen: r.cur.gen, events: evs, seeked: !r.sent})
		r.sent = true
		r.commands()
		for {
			var ev transport.Event
			ok := r.m.popInto(&ev)
			r.commands()
			scribble()
			if !ok {
				break
			}
			got = append(got, copyEvent(&ev))
		}
	}
	r.live(msgs(sB, 111, 115)...)
	got = append(got, r.got...)
	account(t, got, span{sA, 1, 50}, span{sB, 1, 115})
}

// TestMergeJoinSeqAhead: join seq:N where the archive has not reached N
// yet (the recorder lags, or N is the live edge): the reader waits at
// the log's end and reads the records the recorder appends, which start
// before N. The history starts at N all the same: those before are not
// delivered after the StreamStart at N.
func TestMergeJoinSeqAhead(t *testing.T) {
	r := newMergeRig(t, JoinSeq(40), 0)
	r.live(cat(startEv(sB, sA, 100), msgs(sB, 100, 110))...)
	r.arch(archive.Pos{Session: 200, Seq: 40}, false, msgs(sB, 31, 60)...)
	r.arch(archive.Pos{Session: 200, Seq: 40}, false, msgs(sB, 61, 101)...)
	if gaps := account(t, r.got, span{sB, 40, 110}); len(gaps) != 0 {
		t.Errorf("gaps %v, want none", gaps)
	}
	// The archive gives nothing more: what is lost starts at N too.
	r = newMergeRig(t, JoinSeq(40), 0)
	r.live(cat(startEv(sB, sA, 100), msgs(sB, 100, 110))...)
	r.arch(archive.Pos{Session: 200, Seq: 40}, false)
	r.idle(nil)
	gaps := account(t, r.got, span{sB, 40, 110})
	if len(gaps) != 1 || gaps[0] != (transport.Gap{Stream: sB, From: 40, To: 99, Reason: transport.GapNotArchived}) {
		t.Errorf("gaps %v, want 40..99 not archived", gaps)
	}
}

// TestMergeArchiveSkipsToLive: the archive lacks, without a marker,
// what lies between the last it gave and the live events held — its
// next record is past where they take over, of the same session or of
// a later one (the recorder was down when the publisher restarted). The
// replay merges, and what lies between is reported missing, once.
// (Before, it was not: the loss held at the queue's front started a
// replay again, which found the same record, merged, and so on for
// ever, the live feed held; at a late join, the hole was silent.)
func TestMergeArchiveSkipsToLive(t *testing.T) {
	for _, c := range []struct {
		name string
		arch []transport.Event
		gaps []transport.Gap
	}{
		{"same session", cat(gapEv(sA, 11, 15, transport.GapSourceDown), msg(sA, 23)),
			[]transport.Gap{{Stream: sA, From: 11, To: 15, Reason: transport.GapSourceDown}, {Stream: sA, From: 16, To: 20, Reason: transport.GapNotArchived}}},
		{"later session", msgs(sB, 1, 3),
			[]transport.Gap{{Stream: sA, From: 11, To: 20, Reason: transport.GapNotArchived}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newMergeRig(t, JoinLive(), 0)
			r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 10), gapEv(sA, 11, 20, transport.GapUnrecoverable), msgs(sA, 21, 25))...)
			r.arch(archive.Pos{Session: 100, Seq: 11}, false, c.arch...)
			if r.m.replaying || r.m.Stats().Replays != 1 {
				t.Fatalf("replaying %v, stats %+v: want one replay, over; orders %+v", r.m.replaying, r.m.Stats(), r.cmds)
			}
			r.live(msgs(sA, 26, 30)...)
			gaps := account(t, r.got, span{sA, 1, 30})
			if fmt.Sprint(gaps) != fmt.Sprint(c.gaps) {
				t.Errorf("gaps %v, want %v", gaps, c.gaps)
			}
		})
	}
	// The archive's last message before them stands for the positions
	// up to them (fragments of one message): nothing is missing.
	r := newMergeRig(t, JoinLive(), 0)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 10), gapEv(sA, 11, 20, transport.GapUnrecoverable), msgs(sA, 21, 25))...)
	r.arch(archive.Pos{Session: 100, Seq: 11}, false, cat(msgs(sA, 11, 18), msg(sA, 21))...)
	if r.m.replaying || r.m.Stats().Replays != 1 {
		t.Fatalf("fragments: replaying %v, stats %+v: want one replay, over", r.m.replaying, r.m.Stats())
	}
	for _, ev := range r.got {
		if ev.Kind == transport.EventGap {
			t.Fatalf("fragments: a gap: %s", show(r.got))
		}
	}
	if n := len(r.got); n != 1+18+5 || r.got[n-1].Message.Seq != 25 {
		t.Fatalf("fragments: delivered %s", show(r.got))
	}
	// A late joiner: the history's last record before the live events
	// held is a marker, and the next is past them.
	r = newMergeRig(t, JoinEarliest(), 0)
	r.live(cat(startEv(sB, sA, 100), msgs(sB, 100, 110))...)
	r.arch(archive.Pos{}, false, cat(msgs(sB, 1, 90), gapEv(sB, 91, 93, transport.GapSourceDown), msg(sB, 100))...)
	gaps := account(t, r.got, span{sB, 1, 110})
	if len(gaps) != 2 || gaps[1] != (transport.Gap{Stream: sB, From: 94, To: 99, Reason: transport.GapNotArchived}) {
		t.Errorf("gaps %v, want 91..93 from the marker, then 94..99 not archived", gaps)
	}
}

// TestMergeDeadTailNotArchivedNextSessionEarlier: the archive lacks
// the tail of a dead session (the recorder went down with it) and holds
// the next session from before where the live feed has it. The dead
// session's lost tail is reported, not swallowed by its end.
func TestMergeDeadTailNotArchivedNextSessionEarlier(t *testing.T) {
	r := newMergeRig(t, JoinLive(), 0)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 10),
		gapEv(sA, 11, 20, transport.GapStreamEnded), endEv(sA, 20, transport.EndReplaced),
		startEv(sB, sA, 5), msgs(sB, 5, 10))...)
	r.arch(archive.Pos{Session: 100, Seq: 11}, false, msgs(sB, 1, 6)...)
	r.live(msgs(sB, 11, 12)...)
	gaps := account(t, r.got, span{sA, 1, 20}, span{sB, 1, 12})
	if len(gaps) != 1 || gaps[0] != (transport.Gap{Stream: sA, From: 11, To: 20, Reason: transport.GapNotArchived}) {
		t.Errorf("gaps %v, want A 11..20 not archived", gaps)
	}
}

// TestMergeDeadTailHeldDelivered: the archive lacks most of a dead
// session's tail (the recorder went down with the publisher), and goes
// on with the next session. The live messages held between the
// engine's losses in that tail, which the replay read past, are
// delivered; only what neither side has is reported missing. (They were
// reported lost with the rest: one Gap from the archive's last record
// to the session's end.)
func TestMergeDeadTailHeldDelivered(t *testing.T) {
	r := newMergeRig(t, JoinLive(), 0)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 10),
		gapEv(sA, 11, 12, transport.GapStreamEnded), msgs(sA, 13, 15),
		gapEv(sA, 16, 20, transport.GapStreamEnded), endEv(sA, 22, transport.EndReplaced),
		startEv(sB, sA, 1), msgs(sB, 1, 5))...)
	r.arch(archive.Pos{Session: 100, Seq: 11}, false, cat(msg(sA, 11), msgs(sB, 1, 3))...)
	r.live(msgs(sB, 6, 7)...)
	gaps := account(t, r.got, span{sA, 1, 22}, span{sB, 1, 7})
	want := []transport.Gap{{Stream: sA, From: 12, To: 12, Reason: transport.GapNotArchived}, {Stream: sA, From: 16, To: 22, Reason: transport.GapNotArchived}}
	if fmt.Sprint(gaps) != fmt.Sprint(want) {
		t.Errorf("gaps %v, want %v", gaps, want)
	}
	if st := r.m.Stats(); st.Replays != 1 || r.m.replaying {
		t.Errorf("stats %+v, replaying %v: want one replay, over", st, r.m.replaying)
	}
}

// TestMergeArchiveAheadEndsSession: the archive has gone on to the next
// session, lacking the end of the current one, before the live events
// the subscriber has seen tell that the current one ended (the
// engine's events wait to be received). What the live events held say
// of the current session stands: their messages are delivered, their
// losses and what lies before them reported missing.
func TestMergeArchiveAheadEndsSession(t *testing.T) {
	r := newMergeRig(t, JoinLive(), 0)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 10),
		gapEv(sA, 11, 12, transport.GapStreamEnded), msgs(sA, 13, 15), gapEv(sA, 16, 20, transport.GapStreamEnded))...)
	r.arch(archive.Pos{Session: 100, Seq: 11}, false, cat(msg(sA, 11), msgs(sB, 1, 3))...)
	r.live(endEv(sA, 20, transport.EndReplaced), startEv(sB, sA, 1))
	r.arch(archive.Pos{Session: 100, Seq: 21}, false, msgs(sB, 1, 3)...)
	r.live(msgs(sB, 1, 5)...)
	gaps := account(t, r.got, span{sA, 1, 20}, span{sB, 1, 5})
	want := []transport.Gap{{Stream: sA, From: 12, To: 12, Reason: transport.GapNotArchived}, {Stream: sA, From: 16, To: 20, Reason: transport.GapNotArchived}}
	if fmt.Sprint(gaps) != fmt.Sprint(want) {
		t.Errorf("gaps %v, want %v", gaps, want)
	}
	// A late joiner: the archive's last message of the session is not
	// followed by its fragments up to the live events held, but by the
	// next session.
	r = newMergeRig(t, JoinEarliest(), 0)
	r.live(cat(startEv(sA, transport.StreamID{}, 19), msgs(sA, 19, 25))...)
	r.arch(archive.Pos{}, false, cat(msgs(sA, 1, 15), msgs(sB, 1, 2))...)
	gaps = account(t, r.got, span{sA, 1, 25})
	if len(gaps) != 1 || gaps[0] != (transport.Gap{Stream: sA, From: 16, To: 18, Reason: transport.GapNotArchived}) {
		t.Errorf("late joiner: gaps %v, want A 16..18 not archived", gaps)
	}
}

// TestMergeJoinSeqPastLive: join seq:N with N past the live edge, and
// an archive that has nothing more (its last record is before N): the
// stream starts at N. The live events before N are dropped, as the
// archive's records before N are (TestMergeJoinSeqAhead); the first
// delivered is N, after a StreamStart at N. (They were delivered: the
// history gave up with nothing to report, and the live feed took over
// from its first event.) A live loss that straddles N is reported
// from N. With an archive that holds nothing of the feed, N is of the
// live session.
func TestMergeJoinSeqPastLive(t *testing.T) {
	r := newMergeRig(t, JoinSeq(500), 0)
	r.live(cat(startEv(sB, sA, 100), msgs(sB, 100, 110))...)
	r.arch(archive.Pos{Session: 200, Seq: 500}, false)
	r.idle(nil)
	r.live(msgs(sB, 111, 499)...)
	if len(r.got) != 0 {
		t.Fatalf("delivered before N: %s", show(r.got[:min(len(r.got), 8)]))
	}
	r.live(msgs(sB, 500, 505)...)
	if gaps := account(t, r.got, span{sB, 500, 505}); len(gaps) != 0 {
		t.Errorf("gaps %v, want none", gaps)
	}
	if st := r.m.Stats(); st.Duplicates != 0 {
		t.Errorf("stats %+v: the live events before N counted as duplicates", st)
	}

	r = newMergeRig(t, JoinSeq(500), 0)
	r.live(cat(startEv(sB, sA, 100), msgs(sB, 100, 110))...)
	r.arch(archive.Pos{Session: 200, Seq: 500}, false)
	r.idle(nil)
	r.live(cat(msgs(sB, 111, 497), gapEv(sB, 498, 502, transport.GapTooLarge), msgs(sB, 503, 505))...)
	gaps := account(t, r.got, span{sB, 500, 505})
	if len(gaps) != 1 || gaps[0] != (transport.Gap{Stream: sB, From: 500, To: 502, Reason: transport.GapTooLarge}) {
		t.Errorf("gaps %v, want 500..502 too large", gaps)
	}

	// An archive that holds nothing of the feed names no session: N is
	// of the live one, and what it lacks from N is reported missing.
	r = newMergeRig(t, JoinSeq(40), 0)
	r.idle(nil)
	r.live(cat(startEv(sB, sA, 100), msgs(sB, 100, 110))...)
	r.idle(nil)
	gaps = account(t, r.got, span{sB, 40, 110})
	if len(gaps) != 1 || gaps[0] != (transport.Gap{Stream: sB, From: 40, To: 99, Reason: transport.GapNotArchived}) {
		t.Errorf("empty archive: gaps %v, want 40..99 not archived", gaps)
	}
}

// TestMergeDuplicatesExact: ArchiveStats.Duplicates counts messages
// received twice and dropped the second time, and nothing else. The
// live messages held that the merger delivers itself when the archive
// lacks the rest of their session (13..15 here) were counted again
// when their held copies were dropped afterwards, as were the held
// gaps, StreamEnd and StreamStart the archive or the merger stood in
// for.
func TestMergeDuplicatesExact(t *testing.T) {
	for _, c := range []struct {
		name string
		arch []transport.Event
		dups uint64
	}{
		{"none twice", cat(msg(sA, 11), msgs(sB, 1, 3)), 0},
		{"one twice", cat(msgs(sA, 11, 13), msgs(sB, 1, 3)), 1}, // 13: live and archived
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newMergeRig(t, JoinLive(), 0)
			r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 10),
				gapEv(sA, 11, 12, transport.GapStreamEnded), msgs(sA, 13, 15),
				gapEv(sA, 16, 20, transport.GapStreamEnded), endEv(sA, 22, transport.EndReplaced),
				startEv(sB, sA, 1), msgs(sB, 1, 5))...)
			r.arch(archive.Pos{Session: 100, Seq: 11}, false, c.arch...)
			r.live(msgs(sB, 6, 7)...)
			account(t, r.got, span{sA, 1, 22}, span{sB, 1, 7})
			if st := r.m.Stats(); st.Duplicates != c.dups {
				t.Errorf("stats %+v: want %d duplicates", st, c.dups)
			}
		})
	}

	// The buffer overflows while the replay reads past the live events
	// held: those dropped from its front that the archive delivered
	// already (a gap, 13 and 14) were not lost, and are not counted as
	// dropped live events (read from the archive instead); 13..15 were
	// received twice.
	r := newMergeRig(t, JoinLive(), 6)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 10),
		gapEv(sA, 11, 12, transport.GapUnrecoverable), msgs(sA, 13, 15), gapEv(sA, 16, 20, transport.GapUnrecoverable))...)
	r.arch(archive.Pos{Session: 100, Seq: 11}, false, msgs(sA, 11, 17)...)
	r.live(msgs(sA, 21, 24)...)
	r.arch(archive.Pos{Session: 100, Seq: 11}, false, msgs(sA, 18, 22)...)
	if gaps := account(t, r.got, span{sA, 1, 24}); len(gaps) != 0 {
		t.Errorf("overflow: gaps %v, want none", gaps)
	}
	if st := r.m.Stats(); st.Duplicates != 3 || st.LiveDropped != 0 || st.Replays != 1 {
		t.Errorf("overflow: stats %+v: want 3 duplicates, no live event dropped, one replay", st)
	}
}

// TestMergeAwaitsLiveAtSessionEnd: a late joiner's replay reaches the
// next session in the archive, which lacks the end of the current one
// (its recorder went down with the publisher), before any live event
// was handed to the merger (the engine's events were on their way).
// Where the current session ended only the live feed can tell: the
// replay waits at the record of the next session for a live event
// (ArchiveConfig.Wait at most), and the live events then say the
// session went on to 20, lost from 16: a Gap, then the end at 20. (The
// session was ended at 15, the archive's last record of it, and the
// live events that said more were dropped as of a session over: 16..20
// neither delivered nor in a Gap.) When no live event comes within
// Wait, the archive's records say where it ended.
func TestMergeAwaitsLiveAtSessionEnd(t *testing.T) {
	r := newMergeRig(t, JoinEarliest(), 0)
	r.arch(archive.Pos{}, false, cat(msgs(sA, 1, 15), msgs(sB, 1, 3))...)
	r.live(cat(startEv(sA, transport.StreamID{}, 10), msgs(sA, 10, 15),
		gapEv(sA, 16, 20, transport.GapStreamEnded), endEv(sA, 20, transport.EndReplaced),
		startEv(sB, sA, 1), msgs(sB, 1, 5))...)
	r.arch(archive.Pos{Session: 100, Seq: 16}, false, msgs(sB, 1, 3)...)
	r.live(msgs(sB, 6, 7)...)
	gaps := account(t, r.got, span{sA, 1, 20}, span{sB, 1, 7})
	if len(gaps) != 1 || gaps[0] != (transport.Gap{Stream: sA, From: 16, To: 20, Reason: transport.GapNotArchived}) {
		t.Errorf("gaps %v, want A 16..20 not archived", gaps)
	}

	// No live event within Wait: the session ends at the archive's
	// last record of it, after an open Gap (its tail, if it had one, is
	// missing), and the replay goes on; it waits no more. The live feed
	// still silent when the archive shows the next session, B's end is
	// unknown too; C's the live feed shows.
	r = newMergeRig(t, JoinEarliest(), 0)
	r.arch(archive.Pos{}, false, cat(msgs(sA, 1, 15), msgs(sB, 1, 3))...)
	r.m.awaitOver()
	r.drain()
	sC := transport.StreamID{Feed: 1, Session: 300}
	r.arch(archive.Pos{}, false, cat(msgs(sB, 4, 6), msgs(sC, 1, 2))...)
	if r.m.awaiting {
		t.Fatal("waiting again after a wait in vain")
	}
	r.live(cat(startEv(sC, sB, 2), msgs(sC, 2, 4))...)
	r.idle(nil) // the archive has no more: the live feed takes over
	gaps = account(t, r.got, span{sA, 1, 15}, span{sB, 1, 6}, span{sC, 1, 4})
	if len(gaps) != 2 || !gaps[0].Open || gaps[0].Stream != sA || gaps[0].From != 16 || !gaps[1].Open || gaps[1].Stream != sB || gaps[1].From != 7 {
		t.Errorf("gaps %v, want A's tail from 16 and B's from 7, open", gaps)
	}
}

// TestMergeTwoRecordersMarker pins down a documented limitation (doc.go,
// "Archive"): two recorders writing one topic, the first down for
// 15..17 (its gap marker), the second, a few records behind, with the
// messages. The marker is reported as a Gap, though the second
// recorder's copies follow: nothing in a record says that more are to
// come. The accounting stays exact: the copies are dropped and counted
// as duplicates.
func TestMergeTwoRecordersMarker(t *testing.T) {
	r := newMergeRig(t, JoinLive(), 0)
	r.live(cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 10), gapEv(sA, 11, 20, transport.GapUnrecoverable), msgs(sA, 21, 25))...)
	r.arch(archive.Pos{Session: 100, Seq: 11}, false, cat(msgs(sA, 11, 14), gapEv(sA, 15, 17, transport.GapSourceDown), msg(sA, 18),
		msgs(sA, 13, 18), msgs(sA, 19, 21))...)
	gaps := account(t, r.got, span{sA, 1, 25})
	if len(gaps) != 1 || gaps[0] != (transport.Gap{Stream: sA, From: 15, To: 17, Reason: transport.GapSourceDown}) {
		t.Errorf("gaps %v, want the first recorder's marker 15..17", gaps)
	}
	if st := r.m.Stats(); st.Duplicates != 6 {
		t.Errorf("stats %+v: want the second recorder's 13..18 counted as duplicates", st)
	}
}
