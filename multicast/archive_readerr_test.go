package multicast

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// brokenLog is a memLog whose reads from log position failFrom on fail,
// but for a read of its last record (the search for where to start
// reads it first): the archive goes down under a replay.
type brokenLog struct {
	*memLog
	failFrom uint64
}

func (l brokenLog) Read(ctx context.Context, s transport.StreamID, pos uint64) ([]transport.Message, error) {
	if _, next, _ := l.Bounds(ctx, s); pos >= l.failFrom && pos != next-1 {
		return nil, errors.New("broken: connection refused")
	}
	return l.memLog.Read(ctx, s, pos)
}

// syncBuffer is a bytes.Buffer safe for the reader's goroutine and the
// test's.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestArchiveReadErrorLogged: reads of the archive that fail for Wait
// in the middle of a replay (after its start was found) end the
// recovery: what the archive did not give is a Gap with the engine's
// reason. That must be said, as it is when the archive cannot be read
// where the replay starts: the Gap alone looks like an ordinary loss.
// (Only a failure of the seek was logged; the reads' were only
// counted.)
func TestArchiveReadErrorLogged(t *testing.T) {
	log := brokenLog{memLog: &memLog{batch: 2}, failFrom: 3}
	giveUpMidReplay(t, log, log.memLog, "broken: connection refused")
}

// giveUpMidReplay replays messages 1..10 of sA, the live feed having
// lost 2..9, from log (over mem), whose reads from position 3 on fail
// or hang, and checks that the recovery gives up as a failure: the
// Gap 4..9 keeps the engine's reason, the failure is counted, and a
// warning holds want.
func giveUpMidReplay(t *testing.T, log transport.Log, mem *memLog, want string) {
	t.Helper()
	const n = 10
	mem.add(msgs(sA, 1, n)...)
	var out syncBuffer
	cfg := Config{Feed: 1, Now: time.Now, Logger: slog.New(slog.NewTextHandler(&out, nil))}
	cfg.Archive.URL = "logd://127.0.0.1:1/t"
	cfg.Archive.Wait = 100 * time.Millisecond
	cfg.Archive.setDefaults()
	a := newArchiveSide(&cfg, log)
	t.Cleanup(func() { a.close() })
	got := feedLive(a, cat(startEv(sA, transport.StreamID{}, 1), msg(sA, 1), gapEv(sA, 2, n-1, transport.GapUnrecoverable), msg(sA, n))...)
	got = append(got, replayAll(t, a)...)
	gaps := account(t, got, span{sA, 1, n})
	if len(gaps) != 1 || gaps[0].Reason != transport.GapUnrecoverable || gaps[0].From != 4 || gaps[0].To != n-1 {
		t.Errorf("gaps %v, want 4..%d with the engine's reason", gaps, n-1)
	}
	if st := a.stats(); st.Errors == 0 || st.GaveUp != 1 {
		t.Errorf("stats %+v: want the failed reads counted, the archive given up on once", st)
	}
	if s := out.String(); !strings.Contains(s, "level=WARN") || !strings.Contains(s, want) {
		t.Errorf("log %q: want a warning with %q", s, want)
	}
}

// stuckLog is a memLog whose reads from log position stuckFrom on never
// return until their context ends, but for a read of its last record
// (the search for where to start reads it first): the archive stops
// answering under a replay, without failing.
type stuckLog struct {
	*memLog
	stuckFrom uint64
}

func (l stuckLog) Read(ctx context.Context, s transport.StreamID, pos uint64) ([]transport.Message, error) {
	if _, next, _ := l.Bounds(ctx, s); pos >= l.stuckFrom && pos != next-1 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return l.memLog.Read(ctx, s, pos)
}

// TestArchiveReadTimeoutLogged: reads of the archive that hang in the
// middle of a replay, though the log holds the records asked for, end
// the recovery as failing reads do: a Gap with the engine's reason, a
// warning that says the reads timed out, and the failure counted
// (ArchiveStats.Errors). (A read that timed out was taken for an
// archive with nothing more: the Gap said not archived, and nothing
// was logged or counted.)
func TestArchiveReadTimeoutLogged(t *testing.T) {
	log := stuckLog{memLog: &memLog{batch: 2}, stuckFrom: 3}
	giveUpMidReplay(t, log, log.memLog, "timed out")
}
