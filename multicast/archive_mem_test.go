package multicast

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// memLog is an archive in memory, one stream of records as a recorder
// writes them: a Read returns at most batch of them, and, as a read of
// a kafka.Log whose deadline passed, nothing once its context ended.
// Records below first are deleted (retention): a read from there starts
// at first, as a kafka.Log's does.
type memLog struct {
	mu    sync.Mutex
	recs  []transport.Message
	first uint64
	batch int
	// epoch is when the records add appends were published, but for
	// their sequence number in nanoseconds: the Unix epoch when zero.
	epoch time.Time
}

var memStream = transport.StreamID{Topic: "t"}

// add appends what a recorder writes for each event: a message's record,
// a gap marker or an end marker.
func (l *memLog) add(evs ...transport.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range evs {
		var m transport.Message
		at := func(seq uint64) time.Time {
			if l.epoch.IsZero() {
				return time.Unix(0, int64(seq))
			}
			return l.epoch.Add(time.Duration(seq))
		}
		switch ev.Kind {
		case transport.EventGap:
			m = transport.GapMarker(ev.Gap, at(ev.Gap.From))
		case transport.EventStreamEnd:
			m = transport.EndMarker(ev.End, at(ev.End.LastSeq))
		default:
			o := transport.Origin{Stream: ev.Message.Stream, Seq: ev.Message.Seq, Time: at(ev.Message.Seq)}
			m = transport.Message{Payload: ev.Message.Payload, Headers: transport.AppendOrigin(nil, o)}
		}
		m.Stream, m.Seq = memStream, uint64(len(l.recs))
		l.recs = append(l.recs, m)
	}
}

// trim deletes the records before position first.
func (l *memLog) trim(first uint64) {
	l.mu.Lock()
	l.first = first
	l.mu.Unlock()
}

func (l *memLog) Streams(context.Context) ([]transport.StreamID, error) {
	return []transport.StreamID{memStream}, nil
}

func (l *memLog) Bounds(context.Context, transport.StreamID) (uint64, uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first, uint64(len(l.recs)), nil
}

func (l *memLog) PositionAt(ctx context.Context, s transport.StreamID, _ time.Time) (uint64, error) {
	first, _, err := l.Bounds(ctx, s)
	return first, err
}

func (l *memLog) Read(ctx context.Context, _ transport.StreamID, pos uint64) ([]transport.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	pos = max(pos, l.first)
	end := min(uint64(len(l.recs)), pos+uint64(max(l.batch, 1)))
	var out []transport.Message
	for _, m := range l.recs[min(pos, end):end] {
		m.Headers = append([]transport.Header(nil), m.Headers...)
		out = append(out, m)
	}
	l.mu.Unlock()
	if len(out) == 0 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return out, nil
}

func (l *memLog) Close() error { return nil }

// archiveSideOn is an archive side reading log, as a Subscriber's
// with Archive.Wait wait.
func archiveSideOn(t *testing.T, log transport.Log, wait time.Duration) *archiveSide {
	t.Helper()
	cfg := Config{Feed: 1, Now: time.Now, Logger: slog.New(slog.DiscardHandler)}
	cfg.Archive.URL = "logd://127.0.0.1:1/t"
	cfg.Archive.Wait = wait
	cfg.Archive.setDefaults()
	a := newArchiveSide(&cfg, log)
	t.Cleanup(func() { a.close() })
	return a
}

// feedLive hands a the live events, as Receive does, and returns what
// it delivers meanwhile.
func feedLive(a *archiveSide, evs ...transport.Event) []transport.Event {
	var got []transport.Event
	for i := range evs {
		if a.live(&evs[i]) {
			got = append(got, copyEvent(&evs[i]))
		}
		got = append(got, popAll(a)...)
	}
	return got
}

func popAll(a *archiveSide) []transport.Event {
	var got []transport.Event
	for {
		ev, ok := a.pop()
		if !ok {
			return got
		}
		got = append(got, copyEvent(&ev))
	}
}

// replayAll takes the reader's batches, as Receive does, until the
// replay merged, and returns what was delivered.
func replayAll(t *testing.T, a *archiveSide) []transport.Event {
	t.Helper()
	var got []transport.Event
	timeout := time.After(time.Minute)
	for {
		got = append(got, popAll(a)...)
		a.mu.Lock()
		replaying := a.m.replaying
		a.mu.Unlock()
		if !replaying {
			return got
		}
		select {
		case b := <-a.batches:
			a.take(&b)
		case <-timeout:
			t.Fatalf("the replay never merged; delivered %s", show(got))
		}
	}
}

// TestArchiveSlowApplication: an application slower than the archive
// leaves the reader waiting to hand its batches on, longer than
// Archive.Wait; the archive still holds all that is wanted, so the
// replay must go on, not report it lost. (The reader measured Wait from
// its last read that gave records, the time it waited for the merger
// included: its next read had a deadline already past, gave nothing,
// and the archive was given up on — a Gap, not archived, of what it
// held.)
func TestArchiveSlowApplication(t *testing.T) {
	const n = 3000
	log := &memLog{batch: 100}
	log.add(msgs(sA, 1, n)...)
	// Wait is long enough that no read of the in-memory log, however
	// slow a loaded machine makes it under -race, outlasts it (20 ms
	// did, once): only the application's stall below is longer.
	wait := 250 * time.Millisecond
	a := archiveSideOn(t, log, wait)
	got := feedLive(a, cat(startEv(sA, transport.StreamID{}, 1), msg(sA, 1), gapEv(sA, 2, n-1, transport.GapUnrecoverable), msg(sA, n))...)
	// The application is busy: the reader fills what it may hand on,
	// then waits for it, longer than Wait.
	waitFull(t, a)
	time.Sleep(5 * wait) // the busy application: this is the scenario, not a wait for an event
	got = append(got, replayAll(t, a)...)
	if gaps := account(t, got, span{sA, 1, n}); len(gaps) != 0 {
		t.Errorf("gaps %v, want none: the archive holds it all", gaps)
	}
	if st := a.stats(); st.GaveUp != 0 || st.FromArchive != n-2 {
		t.Errorf("stats %+v: want the archive never given up on, %d messages from it", st, n-2)
	}
}

// waitFull waits until the reader of a has filled what it may hand on
// and waits to hand on more.
func waitFull(t *testing.T, a *archiveSide) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for len(a.batches) < cap(a.batches) {
		if time.Now().After(deadline) {
			t.Fatal("the reader never filled its batches")
		}
		time.Sleep(time.Millisecond) // polling a channel's length: no event to wait on
	}
}

// TestArchiveDeletedUnderReplay: the log's retention deletes records a
// replay has yet to read; the log then reads on from its new start (as
// a kafka.Log does). What was deleted is reported, as a Gap with
// GapRetention, not skipped: the records before and after it are both
// messages, and a message's record does not say how many sequence
// numbers (fragments) it stands for, so the merger took the jump for
// fragments and the hole was silent.
func TestArchiveDeletedUnderReplay(t *testing.T) {
	const n = 3000
	log := &memLog{batch: 100}
	log.add(msgs(sA, 1, n)...)
	a := archiveSideOn(t, log, time.Minute)
	got := feedLive(a, cat(startEv(sA, transport.StreamID{}, 1), msg(sA, 1), gapEv(sA, 2, n-1, transport.GapUnrecoverable), msg(sA, n))...)
	waitFull(t, a) // the reader has read 2..501 at most: it waits to hand them on
	log.trim(2000) // records of 2001.. are left
	got = append(got, replayAll(t, a)...)
	gaps := account(t, got, span{sA, 1, n})
	if len(gaps) != 1 || gaps[0].Reason != transport.GapRetention || gaps[0].To != 2000 {
		t.Errorf("gaps %v, want one up to 2000 deleted by retention", gaps)
	}
}

// TestArchiveDeletedOtherFeeds: the log's retention deletes records a
// replay has yet to read, and the records the log reads on from are
// another feed's (two feeds recorded into one topic): the reads that
// return only them give the merger nothing, and the word that records
// were deleted must wait, carried over, for the feed's next record. Its
// jump is then reported as GapRetention, not taken for the last
// message's fragments (a silent hole).
func TestArchiveDeletedOtherFeeds(t *testing.T) {
	const n = 3000
	other := transport.StreamID{Feed: 2, Session: 100}
	log := &memLog{batch: 100}
	log.add(msgs(sA, 1, 2000)...)
	log.add(msgs(other, 1, 250)...) // log positions 2000..2249
	log.add(msgs(sA, 2001, n)...)
	a := archiveSideOn(t, log, time.Minute)
	got := feedLive(a, cat(startEv(sA, transport.StreamID{}, 1), msg(sA, 1), gapEv(sA, 2, n-1, transport.GapUnrecoverable), msg(sA, n))...)
	waitFull(t, a) // the reader has read 2..501 at most: it waits to hand them on
	log.trim(2000) // the next three reads are all feed 2's
	got = append(got, replayAll(t, a)...)
	gaps := account(t, got, span{sA, 1, n})
	if len(gaps) != 1 || gaps[0].Reason != transport.GapRetention || gaps[0].To != 2000 {
		t.Errorf("gaps %v, want one up to 2000 deleted by retention", gaps)
	}
}

// TestArchiveAwaitLiveBounded: a late joiner whose archive goes on to
// the next session before the live feed showed anything waits there for
// a live event (merger.awaiting) — Archive.Wait at most: on a silent
// feed (no publisher here) the history goes on, the first session
// ending where the archive's records of it stop, after an open Gap
// (its tail, if it had one, is missing). Receive takes no batch
// of the reader meanwhile, and wakes when Wait is over.
func TestArchiveAwaitLiveBounded(t *testing.T) {
	log := &memLog{batch: 100}
	log.add(cat(msgs(sA, 1, 15), msgs(sB, 1, 3))...)
	cfg := testConfig(t)
	cfg.Feed = 1
	cfg.Archive.Open = func(context.Context) (transport.Log, error) { return log, nil }
	cfg.Archive.Join = JoinEarliest()
	cfg.Archive.Wait = 250 * time.Millisecond // no read of log outlasts it, even loaded under -race
	s := mustSub(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // fails rather than hangs
	defer cancel()
	var got []transport.Event
	for len(got) == 0 || got[len(got)-1].Kind != transport.EventMessage || got[len(got)-1].Message.Stream != sB || got[len(got)-1].Message.Seq != 3 {
		ev, err := s.Receive(ctx)
		if err != nil {
			t.Fatalf("after %s: %v", show(got), err)
		}
		got = append(got, copyEvent(&ev))
	}
	gaps := account(t, got, span{sA, 1, 15}, span{sB, 1, 3})
	// Where the first session ended nothing said: its tail, if it had
	// one, is reported, in an open Gap.
	if len(gaps) != 1 || gaps[0] != (transport.Gap{Stream: sA, From: 16, To: 16, Reason: transport.GapNotArchived, Open: true}) {
		t.Errorf("gaps %v, want A's tail from 16 open", gaps)
	}
	if st := s.Stats().Archive; st.FromArchive != 18 || st.OpenGaps != 1 {
		t.Errorf("archive stats %+v: want 18 messages from it, one open gap", st)
	}
}
