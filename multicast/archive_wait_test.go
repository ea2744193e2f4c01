package multicast

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/brokerless/brokerless/transport"
)

// quietLog is an archive that exists and holds nothing: a read waits
// until its context ends for a record that does not come.
type quietLog struct{ hangingLog }

func (quietLog) Streams(context.Context) ([]transport.StreamID, error) {
	return []transport.StreamID{{Topic: "t"}}, nil
}

func (quietLog) Bounds(context.Context, transport.StreamID) (uint64, uint64, error) {
	return 0, 0, nil
}

// waitIdle starts a replay (a loss the publisher could not repair) on
// an archive side reading log, and returns the first batch of its
// reader that says the archive is idle. No test waits on a clock: the
// bound is only there to fail rather than hang.
func waitIdle(t *testing.T, log transport.Log, now func() time.Time) archiveBatch {
	t.Helper()
	cfg := Config{Feed: 1, Now: now, Logger: slog.New(slog.DiscardHandler)}
	cfg.Archive.URL = "logd://127.0.0.1:1/t"
	cfg.Archive.Wait = 20 * time.Millisecond
	cfg.Archive.setDefaults()
	a := newArchiveSide(&cfg, log)
	defer a.close()
	for _, ev := range cat(startEv(sA, transport.StreamID{}, 1), msg(sA, 1), gapEv(sA, 2, 9, transport.GapUnrecoverable)) {
		a.live(&ev)
		for {
			if _, ok := a.pop(); !ok {
				break
			}
		}
	}
	timeout := time.After(time.Minute)
	for {
		select {
		case b := <-a.batches:
			if b.idle {
				return b
			}
		case <-timeout:
			t.Fatal("the reader never said the archive was idle: the replay would hold the live feed for ever")
		}
	}
}

// TestArchiveSeekBounded: a log that does not answer where the replay
// starts (here every call hangs; with Kafka, a search that reads a
// position holding only a transaction marker waits for the next record)
// is given up on after Wait, with an error, as one that cannot be read:
// one that says the reads timed out (ErrArchiveTimeout), not a bare
// "context deadline exceeded".
func TestArchiveSeekBounded(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	b := waitIdle(t, hangingLog{}, time.Now)
	if b.err == nil {
		t.Errorf("idle without the error: the merger would report the loss as not archived, not as the engine's")
	}
	if !errors.Is(b.err, ErrArchiveTimeout) || !strings.Contains(b.err.Error(), "timed out") {
		t.Errorf("error %v: want one wrapping ErrArchiveTimeout, naming the cause", b.err)
	}
}

// TestArchiveWaitClock: the reader measures Wait on the clock of its
// read deadlines, not on Config.Now: an injected clock that stands still
// does not keep the replay waiting for ever.
func TestArchiveWaitClock(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	frozen := time.Unix(1_700_000_000, 0)
	if b := waitIdle(t, quietLog{}, func() time.Time { return frozen }); b.err != nil {
		t.Errorf("idle with %v, want nothing more, not an error", b.err)
	}
}
