package dispatch

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
	"github.com/brokerless/brokerless/webhook/store/pgtest"
)

// TestSkewedClocksPostgres: two dispatchers on one PostgreSQL database,
// the second's clock 30 s ahead of the first's (their leases 20 s): while
// the first attempts a delivery, the second's claims do not take it (a
// lease is measured by the server's clock), so it is never attempted by
// both at once. With leases by each dispatcher's clock the second found
// the first's lease expired at its first claim and attempted it too.
func TestSkewedClocksPostgres(t *testing.T) {
	cluster := pgtest.Start(t, "fsync=off")
	addr := cluster.NewDatabase(t)
	open := func() store.Store {
		s, err := store.Open(context.Background(), addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s1, s2 := open(), &claimSpy{Store: open(), claims: make(chan claimSeen, 64)}
	arrived, release := make(chan struct{}, 10), make(chan struct{})
	var (
		mu       sync.Mutex
		requests int
	)
	srv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		requests++
		mu.Unlock()
		arrived <- struct{}{}
		<-release
		w.WriteHeader(http.StatusOK)
	})
	now := time.Now()
	addEndpoint(t, s1, "ep_1", srv.URL, now)
	ev := addEvent(t, s1, "t", now)
	cfg := Config{Store: s1, Addresses: loopback, Timeout: 5 * time.Second, Owner: "d0"}
	d0, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer run(t, d0)()
	<-arrived // d0's attempt is under way, its lease until now + 20 s
	cfg.Store, cfg.Owner, cfg.PollInterval = s2, "d1", 10*time.Millisecond
	cfg.Now = func() time.Time { return time.Now().Add(30 * time.Second) }
	d1, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stopD1 := run(t, d1)
	claimed := 0
	for range 3 {
		claimed += (<-s2.claims).jobs
	}
	stopD1()
	close(release)
	for len(s2.claims) > 0 {
		claimed += (<-s2.claims).jobs
	}
	mu.Lock()
	n := requests
	mu.Unlock()
	if claimed != 0 || n != 1 {
		t.Fatalf("the dispatcher whose clock is 30 s ahead claimed %d while the other attempted %s; %d requests, want 1", claimed, ev.ID, n)
	}
}

// failFirstComplete fails its first Complete without writing anything.
type failFirstComplete struct {
	store.Store
	mu     sync.Mutex
	failed bool
}

func (s *failFirstComplete) Complete(ctx context.Context, cs ...*store.Completion) error {
	s.mu.Lock()
	first := !s.failed
	s.failed = true
	s.mu.Unlock()
	if first {
		return errors.New("test: the database is restarting")
	}
	return s.Store.Complete(ctx, cs...)
}

// TestCompleteRetrySkewedPostgres: a dispatcher whose clock is 30 s
// ahead of PostgreSQL's (its leases 20 s) writes again a completion whose
// first write failed, while its lease holds: the lease is measured from
// its claim by its own clock, not by the server's LeaseUntil (which it
// found past already, and gave up: the attempt was lost, made again
// once its lease expired).
func TestCompleteRetrySkewedPostgres(t *testing.T) {
	base, err := store.Open(context.Background(), pgtest.Start(t, "fsync=off").NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	r := newReceiver(t, status(http.StatusOK))
	now := time.Now()
	addEndpoint(t, base, "ep_1", r.URL, now)
	ev := addEvent(t, base, "t", now)
	d, err := New(Config{Store: &failFirstComplete{Store: base}, Addresses: loopback, Timeout: 5 * time.Second,
		Now: func() time.Time { return time.Now().Add(30 * time.Second) }})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.DeliverDue(context.Background()); err != nil || n != 1 {
		t.Fatalf("DeliverDue: %d %v, want 1", n, err)
	}
	ds, err := base.ListDeliveries(context.Background(), ev.ID)
	if err != nil || len(ds) != 1 {
		t.Fatalf("deliveries %v %v", ds, err)
	}
	if ds[0].Status != store.StatusSucceeded || ds[0].Attempts != 1 {
		t.Fatalf("delivery %s with %d attempts, want succeeded at its first attempt (its completion written again); stats %+v", ds[0].Status, ds[0].Attempts, d.Stats())
	}
}
