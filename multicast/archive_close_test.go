package multicast

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/brokerless/brokerless/transport"
)

// hangingLog is an archive that never answers: every call waits until
// its context ends, as a reader goroutine does on a quiet log.
type hangingLog struct{}

func (hangingLog) Streams(ctx context.Context) ([]transport.StreamID, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (hangingLog) Bounds(ctx context.Context, _ transport.StreamID) (uint64, uint64, error) {
	<-ctx.Done()
	return 0, 0, ctx.Err()
}

func (hangingLog) PositionAt(ctx context.Context, _ transport.StreamID, _ time.Time) (uint64, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

func (hangingLog) Read(ctx context.Context, _ transport.StreamID, _ uint64) ([]transport.Message, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (hangingLog) Close() error { return nil }

// TestArchiveCloseWhileReceiving: Subscriber.Close stops the archive's
// reader while Receive may be starting one (a loss orders a replay):
// no reader goroutine outlives Close, whichever comes first, and the two
// do not race on the reader's handles (run with -race). (Receive could
// start a reader after Close stopped the last one: it leaked, blocked
// on the log, and wrote the handles Close read.)
func TestArchiveCloseWhileReceiving(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cfg := Config{Feed: 1, Now: time.Now, Logger: slog.New(slog.DiscardHandler)}
	cfg.Archive.URL = "logd://127.0.0.1:1/t"
	cfg.Archive.setDefaults()
	lossy := cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 3), gapEv(sA, 4, 9, transport.GapUnrecoverable))
	receive := func(a *archiveSide) {
		for i := range lossy {
			a.live(&lossy[i])
			for {
				if _, ok := a.pop(); !ok {
					break
				}
			}
		}
	}

	a := newArchiveSide(&cfg, hangingLog{})
	if err := a.close(); err != nil {
		t.Fatal(err)
	}
	receive(a) // after Close: the replay it orders starts no reader
	if !a.m.replaying {
		t.Fatal("the loss ordered no replay: the test tests nothing")
	}

	for range 50 {
		a := newArchiveSide(&cfg, hangingLog{})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); receive(a) }()
		go func() { defer wg.Done(); _ = a.close() }()
		wg.Wait()
	}
}
