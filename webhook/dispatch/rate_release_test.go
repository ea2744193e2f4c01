package dispatch

import (
	"context"
	"sync"
	"testing"

	"github.com/brokerless/brokerless/webhook/store"
)

// disableDuringClaim is a store whose first claim takes a second (the
// test's clock moves on by one) during which the endpoint's user
// disables it.
type disableDuringClaim struct {
	store.Store
	t    *testing.T
	c    *clock
	id   string
	once sync.Once
}

func (s *disableDuringClaim) Claim(ctx context.Context, r store.ClaimRequest) ([]*store.Job, error) {
	jobs, err := s.Store.Claim(ctx, r)
	s.once.Do(func() {
		s.c.Set(s.c.Now().Add(endpointRecheck))
		setEnabled(s.t, s.Store, s.id, false)
	})
	return jobs, err
}

func setEnabled(t *testing.T, s store.Store, id string, enabled bool) {
	t.Helper()
	e, err := s.GetEndpoint(context.Background(), id)
	if err != nil {
		t.Error(err)
		return
	}
	e.Enabled = enabled
	if err := s.UpdateEndpoint(context.Background(), e); err != nil {
		t.Error(err)
	}
}

// TestRateSlotReturnedWhenReleasedAtStart: the rate-limit slots taken
// for deliveries a worker then releases unattempted (their endpoint
// found disabled by its user as the worker read it again) are given
// back: the endpoint, enabled again at once, gets its whole burst.
// Lost, it got what was left of it.
func TestRateSlotReturnedWhenReleasedAtStart(t *testing.T) {
	c := &clock{t: t0}
	s := &disableDuringClaim{Store: sqliteStore(t), t: t, c: c, id: "ep_1"}
	rcv := newReceiver(t, status(200))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	rateLimited(t, s, "ep_1", 4)
	for range 20 {
		addEvent(t, s, "t", t0)
	}
	// (One worker: a second would attempt its delivery while the first
	// reads the endpoint again.)
	d := newDispatcher(t, s, c, func(cfg *Config) { cfg.Concurrency = 1 })
	if _, err := d.DeliverDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(rcv.requests()); n != 0 {
		t.Fatalf("%d requests to an endpoint its user disabled, want 0", n)
	}
	setEnabled(t, s, "ep_1", true)
	if _, err := d.DeliverDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	// One at a time, each as the last ends, at the same time.
	if n := len(rcv.requests()); n != 4 {
		t.Fatalf("%d requests at once to an endpoint limited to 4/s (1 s burst), enabled again after the delivery of its slot was released unattempted; want 4", n)
	}
}
