package multicast

import (
	"fmt"
	"testing"
	"time"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/archive"
	"github.com/brokerless/brokerless/transport/transporttest"
)

// joinT is the time the tests below join at.
var joinT = time.Unix(1_700_000_000, 0)

// fixedRand is a reliable.Rand that always draws n.
type fixedRand uint64

func (r fixedRand) Uint64() uint64 { return uint64(r) }

// sessionAt is a session of feed 1 whose publisher started at t.
func sessionAt(t time.Time) transport.StreamID {
	return transport.StreamID{Feed: 1, Session: reliable.NewSession(t, fixedRand(7))}
}

// msgsAt are messages from..to of s, published at t.
func msgsAt(s transport.StreamID, from, to uint64, t time.Time) []transport.Event {
	evs := msgs(s, from, to)
	for i := range evs {
		evs[i].Message.Time = t
	}
	return evs
}

// TestMergeJoinTimeSilentArchive: a time join whose archive gives
// nothing (it holds nothing of the session, or cannot be read) reports
// of the live session's positions before the first live message only
// what the join asked for: all of them when the session started at or
// after the join time (as a join earliest would); none when the first
// live message was published before it; and, when the session started
// before it and where the join time falls is unknown, a Gap that says
// so (GapStartUnknown, Len 0) at the position before the first live
// message, not a range from 1, which would claim that messages
// published before the join time were lost.
func TestMergeJoinTimeSilentArchive(t *testing.T) {
	before, after := sessionAt(joinT.Add(-time.Hour)), sessionAt(joinT.Add(time.Second))
	for _, c := range []struct {
		name  string
		s     transport.StreamID
		at    time.Time // the live messages' publish time
		first uint64
		gaps  []transport.Gap
	}{
		{"session started before T", before, joinT.Add(time.Minute), 99,
			[]transport.Gap{{Stream: before, From: 99, To: 99, Reason: transport.GapStartUnknown}}},
		{"session started after T", after, joinT.Add(time.Minute), 1,
			[]transport.Gap{{Stream: after, From: 1, To: 99, Reason: transport.GapNotArchived}}},
		{"first live message before T", before, joinT.Add(-time.Minute), 100, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newMergeRig(t, JoinTime(joinT), 0)
			r.idle(nil) // nothing held yet: the history goes on
			r.live(cat(startEv(c.s, transport.StreamID{}, 100), msgsAt(c.s, 100, 110, c.at))...)
			r.idle(nil)
			gaps := account(t, r.got, span{c.s, c.first, 110})
			if fmt.Sprint(gaps) != fmt.Sprint(c.gaps) {
				t.Errorf("gaps %v, want %v", gaps, c.gaps)
			}
			for _, g := range gaps {
				if g.Reason == transport.GapStartUnknown && g.Len() != 0 {
					t.Errorf("gap %v: Len %d, want 0 (how many is unknown)", g, g.Len())
				}
			}
		})
	}
}

// TestMergeJoinTimeRetention: a time join whose archive's records of
// the session start past where the join time falls, its retention
// having deleted those before, reports them deleted as a seq join does
// (GapRetention) when the whole session was published after the join
// time; when it started before, how much of what was deleted came after
// the join time is unknown, and the Gap says so (GapStartUnknown). (No
// Gap at all was reported: the history started silently at the first
// record left.)
func TestMergeJoinTimeRetention(t *testing.T) {
	before, after := sessionAt(joinT.Add(-time.Hour)), sessionAt(joinT.Add(time.Second))
	for _, c := range []struct {
		name  string
		s     transport.StreamID
		first uint64
		gaps  []transport.Gap
	}{
		{"session started after T", after, 1,
			[]transport.Gap{{Stream: after, From: 1, To: 44, Reason: transport.GapRetention}}},
		{"session started before T", before, 44,
			[]transport.Gap{{Stream: before, From: 44, To: 44, Reason: transport.GapStartUnknown}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newMergeRig(t, JoinTime(joinT), 0)
			r.live(cat(startEv(c.s, transport.StreamID{}, 100), msgsAt(c.s, 100, 110, joinT.Add(time.Minute)))...)
			r.arch(archive.Pos{}, true, msgsAt(c.s, 45, 101, joinT.Add(time.Minute))...)
			gaps := account(t, r.got, span{c.s, c.first, 110})
			if fmt.Sprint(gaps) != fmt.Sprint(c.gaps) {
				t.Errorf("gaps %v, want %v", gaps, c.gaps)
			}
		})
	}
}

// TestMergeJoinTimeUnrecordedStart: a time join whose archive's first
// record at or after the join time is of a session whose publisher
// started at or after it, past the session's first position, though
// the log deleted nothing (the recorder joined the session late, or
// the log starts there): every position of the session was published
// after the join time, and those before the first record were never
// archived. They are reported (GapNotArchived), as the live feed's
// would be were the archive silent (TestMergeJoinTimeSilentArchive).
// (They were skipped without a Gap: the history started silently at
// the first record.) Of a session that started before the join time,
// a record of it before says where the join time falls: nothing is
// reported; when the log holds none (the recorder joined the session
// late: the log's record before is of another session, or there is
// none), which positions before the first record were published at or
// after the join time is unknown, and a Gap says so (GapStartUnknown,
// Len 0, at the position before). (Those were dropped with no Gap.)
func TestMergeJoinTimeUnrecordedStart(t *testing.T) {
	before, after := sessionAt(joinT.Add(-time.Hour)), sessionAt(joinT.Add(time.Second))
	older := sessionAt(joinT.Add(-2 * time.Hour))
	for _, c := range []struct {
		name  string
		s     transport.StreamID
		prior archive.Pos
		first uint64
		gaps  []transport.Gap
	}{
		{"session started after T", after, archive.Pos{}, 1,
			[]transport.Gap{{Stream: after, From: 1, To: 44, Reason: transport.GapNotArchived}}},
		{"session started before T, its record before", before, posOf(before, 44), 45, nil},
		{"session started before T, an earlier record of it before", before, posOf(before, 30), 45, nil},
		{"session started before T, nothing before", before, archive.Pos{}, 44,
			[]transport.Gap{{Stream: before, From: 44, To: 44, Reason: transport.GapStartUnknown}}},
		{"session started before T, another session before", before, posOf(older, 9), 44,
			[]transport.Gap{{Stream: before, From: 44, To: 44, Reason: transport.GapStartUnknown}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newMergeRig(t, JoinTime(joinT), 0)
			r.live(cat(startEv(c.s, transport.StreamID{}, 100), msgsAt(c.s, 100, 110, joinT.Add(time.Minute)))...)
			r.archAfter(c.prior, false, msgsAt(c.s, 45, 101, joinT.Add(time.Minute))...)
			gaps := account(t, r.got, span{c.s, c.first, 110})
			if fmt.Sprint(gaps) != fmt.Sprint(c.gaps) {
				t.Errorf("gaps %v, want %v", gaps, c.gaps)
			}
			if err := transporttest.CheckAccounting(r.got, true); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestMergeJoinTimeRestartAfterArchive: a time join whose time is after
// the archive's last record, the live feed starting with a session
// that replaced the one of that record (its publisher restarted): what
// the old session published after its last record, perhaps after the
// join time, is not in the archive and was not heard. Where it ended is
// unknown, so its tail is reported in an open Gap from the position
// after that record, as a dead session's tail is when the live feed
// never said where it ended (TestMergeOpenGapAfterWait), and it ends
// there before the new session starts. (The new session started with
// nothing said of the old one.) An end marker as that record says the
// old session closed there: nothing is missing; a record of another
// session says nothing of the replaced one's numbers: nothing is
// reported.
func TestMergeJoinTimeRestartAfterArchive(t *testing.T) {
	old, other := sessionAt(joinT.Add(-time.Hour)), sessionAt(joinT.Add(-2*time.Hour))
	s := sessionAt(joinT.Add(time.Second))
	for _, c := range []struct {
		name  string
		prior archive.Pos
		end   bool
		spans []span
	}{
		{"old session's message", posOf(old, 50), false, []span{{old, 51, 51}, {s, 1, 10}}},
		{"old session's end marker", posOf(old, 50), true, []span{{s, 1, 10}}},
		{"another session's message", posOf(other, 50), false, []span{{s, 1, 10}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newMergeRig(t, JoinTime(joinT), 0)
			r.archAfter(c.prior, c.end)
			r.idle(nil)
			r.live(cat(startEv(s, old, 1), msgsAt(s, 1, 10, joinT.Add(time.Minute)))...)
			r.idle(nil)
			gaps := account(t, r.got, c.spans...)
			if len(c.spans) == 1 {
				if len(gaps) != 0 {
					t.Errorf("gaps %v, want none", gaps)
				}
			} else if want := (transport.Gap{Stream: old, From: 51, To: 51, Reason: transport.GapNotArchived, Open: true}); len(gaps) != 1 || gaps[0] != want {
				t.Errorf("gaps %v, want %v", gaps, want)
			}
			for _, ev := range r.got {
				if ev.Kind == transport.EventStreamStart && ev.Start.Stream == s && ev.Start.Replaces != old {
					t.Errorf("%v's start does not say it replaced %v: %s", s, old, show(r.got))
				}
			}
			if err := transporttest.CheckAccounting(r.got, true); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestMergeJoinTimeUnknownMarker: a time join whose first record, past
// the log's deleted start, is a gap marker whose start is unknown (a
// recorder that joined by time wrote it): the position before, which
// the join reports unknown too, and the marker are two Gaps of unknown
// size, each with To = From. (They were joined into one from the first
// to the marker's To with Len 0, which says neither how many nor which.)
func TestMergeJoinTimeUnknownMarker(t *testing.T) {
	s := sessionAt(joinT.Add(-time.Hour))
	r := newMergeRig(t, JoinTime(joinT), 0)
	r.live(cat(startEv(s, transport.StreamID{}, 100), msgsAt(s, 100, 110, joinT.Add(time.Minute)))...)
	r.arch(archive.Pos{}, true, cat(gapEv(s, 44, 44, transport.GapStartUnknown), msgsAt(s, 45, 101, joinT.Add(time.Minute)))...)
	gaps := account(t, r.got, span{s, 43, 110})
	want := []transport.Gap{
		{Stream: s, From: 43, To: 43, Reason: transport.GapStartUnknown},
		{Stream: s, From: 44, To: 44, Reason: transport.GapStartUnknown},
	}
	if fmt.Sprint(gaps) != fmt.Sprint(want) {
		t.Errorf("gaps %v, want %v", gaps, want)
	}
	if err := transporttest.CheckAccounting(r.got, true); err != nil {
		t.Error(err)
	}
}

// TestMergeJoinTimeFirstBeforeT: a time join whose first record, of a
// session that started before the join time, with no record of it
// before in the log, was published before the time: a log finds
// records by time to the millisecond (transport.Log.PositionAt), so a
// Seek lands on the first record of the time's millisecond, which may
// come before it. Nothing before that record was asked for, and no Gap
// is reported, as when the log deleted what came before
// (TestMergeJoinTimeRetention). (A GapStartUnknown was reported before
// it.)
func TestMergeJoinTimeFirstBeforeT(t *testing.T) {
	s, older := sessionAt(joinT.Add(-time.Hour)), sessionAt(joinT.Add(-2*time.Hour))
	for _, prior := range []archive.Pos{{}, posOf(older, 9)} {
		t.Run(fmt.Sprint(prior), func(t *testing.T) {
			r := newMergeRig(t, JoinTime(joinT), 0)
			r.live(cat(startEv(s, transport.StreamID{}, 100), msgsAt(s, 100, 110, joinT.Add(time.Minute)))...)
			r.archAfter(prior, false, cat(msgsAt(s, 45, 45, joinT.Add(-300*time.Microsecond)), msgsAt(s, 46, 101, joinT.Add(time.Minute)))...)
			if gaps := account(t, r.got, span{s, 45, 110}); len(gaps) != 0 {
				t.Errorf("gaps %v, want none", gaps)
			}
			if err := transporttest.CheckAccounting(r.got, true); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestMergeJoinTimeReplacedBeforeT: a time join whose first session
// replaced the one of the archive's last record before the join time,
// and started before that time itself (its number carries its start
// time): the replaced session's publisher had stopped before then, so
// nothing it published after that record was asked for, and no Gap is
// reported for its tail. (An open Gap was, as when the new session
// started after the join time: TestMergeJoinTimeRestartAfterArchive.)
func TestMergeJoinTimeReplacedBeforeT(t *testing.T) {
	old, s := sessionAt(joinT.Add(-time.Hour)), sessionAt(joinT.Add(-time.Minute))
	r := newMergeRig(t, JoinTime(joinT), 0)
	r.live(cat(startEv(s, old, 1), msgsAt(s, 1, 10, joinT.Add(time.Minute)))...)
	r.archAfter(posOf(old, 50), false, msgsAt(s, 1, 5, joinT.Add(time.Second))...)
	r.idle(nil)
	if gaps := account(t, r.got, span{s, 1, 10}); len(gaps) != 0 {
		t.Errorf("gaps %v, want none", gaps)
	}
	if err := transporttest.CheckAccounting(r.got, true); err != nil {
		t.Error(err)
	}
}
