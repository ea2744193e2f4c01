package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
	"github.com/brokerless/brokerless/webhook/store/pgtest"
)

// rateLimited sets endpoint id's rate limit.
func rateLimited(t *testing.T, s store.Store, id string, rate int) {
	t.Helper()
	e, err := s.GetEndpoint(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	e.RateLimit = rate
	if err := s.UpdateEndpoint(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

// TestRateLimitSharedSQLite: two dispatchers on one SQLite file (two
// stores, as two processes have) send an endpoint limited to 2 a second
// no more than 2 at once and 2 more a second later, together: its rate
// limit is the endpoint's, not each dispatcher's. With a bucket per
// dispatcher each sent 2 of its own.
func TestRateLimitSharedSQLite(t *testing.T) {
	path := "sqlite:" + filepath.Join(t.TempDir(), "webhook.db")
	open := func() store.Store {
		s, err := store.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s1, s2 := open(), open()
	c := &clock{t: t0}
	rcv := newReceiver(t, status(200))
	addEndpoint(t, s1, "ep_1", rcv.URL, t0)
	rateLimited(t, s1, "ep_1", 2)
	for range 10 {
		addEvent(t, s1, "t", t0)
	}
	d1, d2 := newDispatcher(t, s1, c), newDispatcher(t, s2, c)
	for _, step := range []struct {
		at   time.Duration
		want int // requests so far, at most
	}{{0, 2}, {500 * time.Millisecond, 3}, {1500 * time.Millisecond, 5}, {2 * time.Second, 6}} {
		c.Set(t0.Add(step.at))
		for _, d := range []*Dispatcher{d1, d2} {
			if _, err := d.DeliverDue(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if got := len(rcv.requests()); got != step.want {
			t.Fatalf("after %v, two dispatchers sent %d requests to an endpoint limited to 2/s (1 s burst); want %d", step.at, got, step.want)
		}
	}
}

// TestRateLimitSharedPostgres: three dispatchers on one PostgreSQL
// database, each with its own store, work through a backlog of an
// endpoint limited to 5 a second: together they send it 5 at once
// (the 1 s burst) and then 5 a second, so its 15th request comes 2 s
// after the first could at the earliest. With a bucket per dispatcher
// each sent 5 at once and 5 a second of its own: the 15th came at once.
func TestRateLimitSharedPostgres(t *testing.T) {
	cluster := pgtest.Start(t, "fsync=off")
	addr := cluster.NewDatabase(t)
	const rate, dispatchers, events = 5, 3, 60
	var stores []store.Store
	for range dispatchers {
		s, err := store.Open(context.Background(), addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	var (
		mu      sync.Mutex
		arrived []time.Time
		owners  = map[string]int{}
	)
	nth := make(chan struct{})
	const want = 3 * rate // the burst and 2 s of the rate
	srv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived = append(arrived, time.Now())
		owners[r.Header.Get(testOwner)]++
		if len(arrived) == want {
			close(nth)
		}
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	})
	now := time.Now()
	addEndpoint(t, stores[0], "ep_1", srv.URL, now)
	rateLimited(t, stores[0], "ep_1", rate)
	for range events {
		addEvent(t, stores[0], "t", now)
	}
	start := time.Now()
	for i, s := range stores {
		owner := fmt.Sprint("d", i)
		client := &http.Client{Transport: ownerTransport{owner, loopback.Transport()},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		d, err := New(Config{Store: s, Addresses: loopback, Client: client, Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		defer run(t, d)()
	}
	select {
	case <-nth:
	case <-time.After(time.Minute):
		t.Fatalf("%d of %d requests in a minute", len(arrived), want)
	}
	mu.Lock()
	defer mu.Unlock()
	// Slot n (from 1) is taken no sooner than (n − rate)/rate s after
	// the first: the database's clock, the machine's, as start's.
	earliest := time.Duration(want-rate) * time.Second / rate
	if el := arrived[want-1].Sub(start); el < earliest-10*time.Millisecond {
		t.Fatalf("%d dispatchers sent request %d to an endpoint limited to %d/s (1 s burst) %v after they started, want no sooner than %v (requests by dispatcher %v)",
			dispatchers, want, rate, el.Round(time.Millisecond), earliest, owners)
	}
	t.Logf("request %d came %v after the start; by dispatcher %v", want, arrived[want-1].Sub(start).Round(time.Millisecond), owners)
}

// failFirstSlots fails its first TakeRateSlots, taking none.
type failFirstSlots struct {
	store.Store
	mu     sync.Mutex
	failed bool
}

func (s *failFirstSlots) TakeRateSlots(ctx context.Context, id string, rate, n int, now time.Time) (int, time.Time, error) {
	s.mu.Lock()
	first := !s.failed
	s.failed = true
	s.mu.Unlock()
	if first {
		return 0, time.Time{}, errors.New("test: the database is restarting")
	}
	return s.Store.TakeRateSlots(ctx, id, rate, n, now)
}

// TestRateSlotsStoreError: deliveries whose rate-limit slots the store
// failed to give are neither attempted nor failed: they stay pending,
// and are delivered, at the rate, once it gives them (after
// PollInterval).
func TestRateSlotsStoreError(t *testing.T) {
	base, c := sqliteStore(t), &clock{t: t0}
	s := &failFirstSlots{Store: base}
	rcv := newReceiver(t, status(200))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	rateLimited(t, s, "ep_1", 2)
	var events []*store.Event
	for range 3 {
		events = append(events, addEvent(t, s, "t", t0))
	}
	d := newDispatcher(t, s, c)
	deliverDue(t, d, 0)
	if n, errs := len(rcv.requests()), d.Stats().StoreErrors; n != 0 || errs != 1 {
		t.Fatalf("the store failing to give slots: %d requests, %d store errors; want 0, 1", n, errs)
	}
	for _, ev := range events {
		ds, err := s.ListDeliveries(context.Background(), ev.ID)
		if err != nil || len(ds) != 1 || ds[0].Status != store.StatusPending || ds[0].Attempts != 0 {
			t.Fatalf("deliveries of %s %+v (%v), want one pending, not attempted", ev.ID, ds, err)
		}
	}
	c.Set(t0.Add(DefaultPollInterval))
	deliverDue(t, d, 2)
	c.Set(t0.Add(DefaultPollInterval + 500*time.Millisecond))
	deliverDue(t, d, 1)
	if n := len(rcv.requests()); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
}
