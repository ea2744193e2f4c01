package pipe

import (
	"context"
	"sync"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// flushBatch is how many messages without receipt wait before a flush
// is started early.
const flushBatch = 1024

// flushReceipts gives receipts for a publisher that has none: what was
// published before a Flush that succeeded has been accepted.
type flushReceipts struct {
	pub  transport.Publisher
	kick chan struct{}
	// last bounds the flush made once stop is closed (Config.DrainTimeout).
	last time.Duration

	mu      sync.Mutex
	pending []func(transport.Receipt, error)
}

func newFlushReceipts(pub transport.Publisher, last time.Duration) *flushReceipts {
	return &flushReceipts{pub: pub, kick: make(chan struct{}, 1), last: last}
}

func (f *flushReceipts) PublishReceipt(ctx context.Context, m transport.Message, done func(transport.Receipt, error)) error {
	if err := f.pub.Publish(ctx, m); err != nil {
		return err
	}
	f.mu.Lock()
	f.pending = append(f.pending, done)
	n := len(f.pending)
	f.mu.Unlock()
	if n >= flushBatch {
		signal(f.kick)
	}
	return nil
}

// loop flushes every interval, or sooner when a batch is waiting, each
// flush bounded by DefaultDrainTimeout, until stop is closed; then once
// more, bounded by last.
func (f *flushReceipts) loop(interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var batch []func(transport.Receipt, error)
	for {
		last := false
		select {
		case <-t.C:
		case <-f.kick:
		case <-stop:
			last = true
		}
		f.mu.Lock()
		batch, f.pending = f.pending, batch[:0]
		f.mu.Unlock()
		if len(batch) > 0 {
			bound := DefaultDrainTimeout
			if last {
				bound = f.last
			}
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			err := f.pub.Flush(ctx)
			cancel()
			for _, done := range batch {
				done(transport.Receipt{}, err)
			}
		}
		if last {
			return
		}
	}
}
