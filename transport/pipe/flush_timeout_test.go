package pipe

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// deadlineDest is a destination without receipts that records how long
// each Flush was given.
type deadlineDest struct {
	plainDest
	published chan struct{}
	mu        sync.Mutex
	given     []time.Duration
}

func (d *deadlineDest) Publish(ctx context.Context, m transport.Message) error {
	defer signal(d.published)
	return d.plainDest.Publish(ctx, m)
}

func (d *deadlineDest) Flush(ctx context.Context) error {
	if dl, ok := ctx.Deadline(); ok {
		d.mu.Lock()
		d.given = append(d.given, time.Until(dl))
		d.mu.Unlock()
	}
	return d.plainDest.Flush(ctx)
}

// TestFinalFlushTakesDrainTimeout: the last flush of a destination
// without receipts, once Run's context ended, is bounded by
// Config.DrainTimeout, not by a fixed DefaultDrainTimeout.
func TestFinalFlushTakesDrainTimeout(t *testing.T) {
	const drain = 100 * time.Millisecond
	d := &deadlineDest{plainDest: plainDest{&dest{}}, published: make(chan struct{}, 1)}
	src := newSource(1)
	src.events <- *msg(feedA, 1)
	p, err := New(src, d, Config{FlushInterval: time.Hour, DrainTimeout: drain})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := runPipe(ctx, p)
	select {
	case <-d.published:
	case <-time.After(waitLimit):
		t.Fatal("nothing published")
	}
	cancel()
	waitRun(t, done) // the drain times out: only the final flush accepts
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.given) != 1 || d.given[0] > drain {
		t.Errorf("flushes given %v, want one of at most %v", d.given, drain)
	}
}
