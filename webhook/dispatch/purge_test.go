package dispatch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// purgeSpy reports the times each Purge deletes before, once it returned.
type purgeSpy struct {
	store.Store
	purged chan time.Time
}

func (s *purgeSpy) Purge(ctx context.Context, before time.Time, limit int) (int, error) {
	n, err := s.Store.Purge(ctx, before, limit)
	s.purged <- before
	return n, err
}

// TestRetention: a running dispatcher deletes the events older than
// Retention (90 days by default), with their deliveries and attempts,
// once at its start and every hour after; newer ones stay. The outbox
// grew without bound.
func TestRetention(t *testing.T) {
	base, c := sqliteStore(t), &clock{t: t0}
	s := &purgeSpy{Store: base, purged: make(chan time.Time, 16)}
	rcv := newReceiver(t, status(204))
	addEndpoint(t, base, "ep_1", rcv.URL, t0)
	old := addEvent(t, base, "t", t0)
	d := newDispatcher(t, s, c)
	deliverDue(t, d, 1)
	now := t0.Add(DefaultRetention + time.Hour)
	c.Set(now)
	recent := addEvent(t, base, "t", now.Add(-time.Hour))
	stop := run(t, d)
	select {
	case before := <-s.purged:
		if want := now.Add(-DefaultRetention); !before.Equal(want) {
			t.Errorf("purged before %v, want %v", before, want)
		}
	case <-time.After(time.Minute):
		t.Fatal("no purge in a minute")
	}
	stop()
	if _, err := base.GetEvent(context.Background(), old.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an event older than the retention: %v, want ErrNotFound", err)
	}
	if as, _ := base.ListAttempts(context.Background(), old.ID); len(as) != 0 {
		t.Errorf("its attempts kept: %+v", as)
	}
	if _, err := base.GetEvent(context.Background(), recent.ID); err != nil {
		t.Errorf("a recent event: %v", err)
	}
	if st := d.Stats(); st.Purged != 1 {
		t.Errorf("stats %+v, want 1 purged", st)
	}
}

// TestRetentionBatches: a purge deletes in batches until one is not
// full (1,001 events: a batch of 1,000, then one of 1); a negative Retention keeps every event.
func TestRetentionBatches(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	for range purgeBatch + 1 {
		addEvent(t, s, "t", t0) // (no endpoint: no deliveries)
	}
	c.Set(t0.Add(time.Hour))
	keep := newDispatcher(t, s, c, func(cfg *Config) { cfg.Retention = -1 })
	if n, err := keep.purge(context.Background()); n != 0 || err != nil {
		t.Fatalf("purge with a negative Retention: %d %v", n, err)
	}
	d := newDispatcher(t, s, c, func(cfg *Config) { cfg.Retention = time.Minute })
	if n, err := d.purge(context.Background()); n != purgeBatch+1 || err != nil {
		t.Fatalf("purge: %d %v, want %d", n, err, purgeBatch+1)
	}
	if evs, _ := s.ListEvents(context.Background(), time.Time{}, "", 10); len(evs) != 0 {
		t.Fatalf("%d events left", len(evs))
	}
}
