package multicast

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/archive"
)

// warnings is a slog.Handler that keeps the messages of the warnings
// logged.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *warnings) WithGroup(string) slog.Handler                { return w }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	w.msgs = append(w.msgs, r.Message)
	w.mu.Unlock()
	return nil
}

// count is the number of warnings whose message holds s.
func (w *warnings) count(s string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, m := range w.msgs {
		if strings.Contains(m, s) {
			n++
		}
	}
	return n
}

// TestMergeOpenGapAfterWait: a late joiner's replay comes to the next
// session in the archive, which lacks the end of the current one, and
// the live feed shows nothing within Wait. Where the session ended is
// unknown: its tail, from the position after the last the archive had,
// is reported in an open Gap (transport.Gap.Open), then the session
// ends there. (It ended at the archive's last record with no Gap: a
// tail the recorder missed, going down with the publisher, was silent.)
func TestMergeOpenGapAfterWait(t *testing.T) {
	r := newMergeRig(t, JoinEarliest(), 0)
	r.arch(archive.Pos{}, false, cat(msgs(sA, 1, 15), msgs(sB, 1, 3))...)
	if !r.m.awaiting {
		t.Fatal("not waiting for the live feed at the next session")
	}
	r.m.awaitOver()
	r.drain()
	gaps := account(t, r.got, span{sA, 1, 15}, span{sB, 1, 3})
	want := transport.Gap{Stream: sA, From: 16, To: 16, Reason: transport.GapNotArchived, Open: true}
	if len(gaps) != 1 || gaps[0] != want {
		t.Fatalf("gaps %v, want %v", gaps, want)
	}
	if g := gaps[0]; g.Len() != 0 || !strings.Contains(g.String(), "end unknown") {
		t.Errorf("open gap: Len %d, String %q: want 0 and an unknown end", g.Len(), g)
	}
	if st := r.m.Stats(); st.OpenGaps != 1 || st.ArchiveGaps != 1 {
		t.Errorf("stats %+v: want one open gap, counted as the archive's", st)
	}
}

// TestMergeLateLiveAfterWait: the live events of the session come
// after the wait for them was over, while the replay reads the next
// session. Those inside the open Gap are dropped (sessions are never
// mixed), counted (ArchiveStats.LateLive) and logged once; and none is
// held as if it said where the replay stops: held, the first (of a
// session over) stopped the replay at once when the session's end was
// not one the archive stands in for (closed), and the live feed, whose
// next session starts at 7, skipped 4..6 of it, neither delivered nor
// in a Gap.
func TestMergeLateLiveAfterWait(t *testing.T) {
	for _, why := range []transport.EndReason{transport.EndReplaced, transport.EndClosed} {
		t.Run(why.String(), func(t *testing.T) {
			w := &warnings{}
			cfg := ArchiveConfig{URL: "logd://x/t", Join: JoinEarliest()}
			cfg.setDefaults()
			r := &mergeRig{t: t, m: newMerger(1, &cfg, slog.New(w))}
			r.commands()
			r.arch(archive.Pos{}, false, cat(msgs(sA, 1, 15), msgs(sB, 1, 3))...)
			r.m.awaitOver()
			r.drain()
			// The engine was slow: A from 10 (10..15 delivered
			// already), its tail 16..20 and end, then B from 7.
			r.live(cat(startEv(sA, transport.StreamID{}, 10), msgs(sA, 10, 20), endEv(sA, 20, why),
				startEv(sB, sA, 7), msgs(sB, 7, 9))...)
			r.arch(archive.Pos{}, false, msgs(sB, 4, 9)...)
			r.live(msgs(sB, 10, 12)...)
			gaps := account(t, r.got, span{sA, 1, 15}, span{sB, 1, 12})
			if len(gaps) != 1 || !gaps[0].Open {
				t.Errorf("gaps %v, want A's open tail only", gaps)
			}
			// Late: A 16..20 and its end (its start, at 10, is not
			// inside the gap); A 10..15 were received twice. B from 7
			// is the live feed's.
			if st := r.m.Stats(); st.LateLive != 6 || st.Duplicates != 6 || st.FromArchive != 15+6 {
				t.Errorf("stats %+v: want 6 late live events, 6 duplicates, 21 messages from the archive", st)
			}
			if n := w.count("came after it was ended"); n != 1 {
				t.Errorf("%d warnings of late live events, want 1: %q", n, w.msgs)
			}
		})
	}
}

// TestMergeJoinSeqReplaces: under join seq:N the session's StreamStart
// says which session it replaced, as the engine's does under join live
// and the merger's under join earliest: with N past the live edge
// (the live StreamStart, before N, dropped), with a live loss across
// N, with an archive that names no session, and with the history from
// the archive.
func TestMergeJoinSeqReplaces(t *testing.T) {
	replaces := func(name string, r *mergeRig, s transport.StreamID) {
		t.Helper()
		for _, ev := range r.got {
			if ev.Kind == transport.EventStreamStart && ev.Start.Stream == s {
				if ev.Start.Replaces != sA {
					t.Errorf("%s: %v's start %+v does not say it replaced %v: %s", name, s, ev.Start, sA, show(r.got))
				}
				return
			}
		}
		t.Errorf("%s: no start of %v: %s", name, s, show(r.got))
	}

	r := newMergeRig(t, JoinLive(), 0)
	r.live(cat(startEv(sB, sA, 100), msgs(sB, 100, 110))...)
	replaces("join live", r, sB)

	r = newMergeRig(t, JoinSeq(500), 0)
	r.live(cat(startEv(sB, sA, 100), msgs(sB, 100, 110))...)
	r.arch(archive.Pos{Session: 200, Seq: 500}, false)
	r.idle(nil)
	r.live(msgs(sB, 111, 505)...)
	replaces("seq:500 past the live edge", r, sB)

	r = newMergeRig(t, JoinSeq(500), 0)
	r.live(cat(startEv(sB, sA, 100), msgs(sB, 100, 110))...)
	r.arch(archive.Pos{Session: 200, Seq: 500}, false)
	r.idle(nil)
	r.live(cat(msgs(sB, 111, 497), gapEv(sB, 498, 502, transport.GapTooLarge), msgs(sB, 503, 505))...)
	replaces("seq:500, a loss across it", r, sB)

	r = newMergeRig(t, JoinSeq(40), 0)
	r.idle(nil)
	r.live(cat(startEv(sB, sA, 100), msgs(sB, 100, 110))...)
	r.idle(nil)
	replaces("seq:40, an empty archive", r, sB)

	r = newMergeRig(t, JoinSeq(50), 0)
	r.live(cat(startEv(sB, sA, 100), msgs(sB, 100, 110))...)
	r.arch(archive.Pos{Session: 200, Seq: 50}, false, msgs(sB, 50, 105)...)
	account(t, r.got, span{sB, 50, 110})
	replaces("seq:50 from the archive", r, sB)
}

// TestMergeAwaitSkipsDelivered: while the replay waits at the next
// session for the live feed, the engine's first events are of positions
// the archive delivered already (it joined the session late, behind the
// recorder): they do not say where the session ended, so the wait goes
// on until its events beyond them do — a Gap 16..20 and the end at 20,
// not an open Gap from 16 (the wait ended at the first of them, and
// 16..20 then came too late).
func TestMergeAwaitSkipsDelivered(t *testing.T) {
	r := newMergeRig(t, JoinEarliest(), 0)
	r.arch(archive.Pos{}, false, cat(msgs(sA, 1, 15), msgs(sB, 1, 3))...)
	r.live(cat(startEv(sA, transport.StreamID{}, 10), msgs(sA, 10, 15))...)
	if !r.m.awaiting {
		t.Fatal("the live events of delivered positions ended the wait")
	}
	r.live(cat(msgs(sA, 16, 18), gapEv(sA, 19, 20, transport.GapStreamEnded), endEv(sA, 20, transport.EndReplaced),
		startEv(sB, sA, 1), msgs(sB, 1, 5))...)
	r.arch(archive.Pos{}, false, msgs(sB, 4, 5)...)
	gaps := account(t, r.got, span{sA, 1, 20}, span{sB, 1, 5})
	if len(gaps) != 1 || gaps[0] != (transport.Gap{Stream: sA, From: 19, To: 20, Reason: transport.GapNotArchived}) {
		t.Errorf("gaps %v, want A 19..20 not archived", gaps)
	}
	if st := r.m.Stats(); st.LateLive != 0 || st.OpenGaps != 0 || st.Duplicates != 6 {
		t.Errorf("stats %+v: want A 10..15 counted as duplicates, nothing late, no open gap", st)
	}
}
