package dispatch

import (
	"context"
	"time"
)

// A purge deletes events purgeBatch at a time (one transaction each),
// until a batch is not full, when Run starts and every purgeInterval.
const (
	purgeBatch    = 1000
	purgeInterval = time.Hour
)

// purgeEvery purges until ctx is done. It is counted in d.wg.
func (d *Dispatcher) purgeEvery(ctx context.Context) {
	defer d.wg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := d.purge(ctx); err != nil && ctx.Err() == nil {
			d.stats.storeErrors.Add(1)
			d.cfg.Logger.Warn("webhook dispatcher: deleting old events", "err", err)
		}
		t.Reset(purgeInterval)
	}
}

// purge deletes the events older than Retention (none if it is
// negative) and returns how many it deleted.
func (d *Dispatcher) purge(ctx context.Context) (int, error) {
	if d.cfg.Retention < 0 {
		return 0, nil
	}
	before := d.cfg.Now().Add(-d.cfg.Retention)
	total := 0
	for ctx.Err() == nil {
		n, err := d.cfg.Store.Purge(ctx, before, purgeBatch)
		total += n
		d.stats.purged.Add(int64(n))
		if err != nil || n < purgeBatch {
			return total, err
		}
	}
	return total, nil
}
