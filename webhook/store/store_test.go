package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
	"github.com/brokerless/brokerless/webhook/store/pgtest"
	"github.com/brokerless/brokerless/webhook/store/storetest"
)

func openT(t *testing.T, addr string) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return openT(t, "sqlite:"+filepath.Join(t.TempDir(), "webhook.db"))
	})
}

func TestPostgres(t *testing.T) {
	c := pgtest.Start(t, "fsync=off")
	// The suite moves an injected clock past leases: leases by the
	// claims' clock (TestPostgresLeaseClockSkew is the database's); and
	// each transaction runs once (NoRetry), so its tests of lock orders
	// see a deadlock that running again would hide.
	storetest.Run(t, func(t *testing.T) store.Store {
		return store.NoRetry(store.LeaseByClaimClock(openT(t, c.NewDatabase(t))))
	})
}

// TestSQLiteReopen: what is committed survives closing and reopening the
// file, and opening an existing schema again is harmless.
func TestSQLiteReopen(t *testing.T) {
	path := "sqlite:" + filepath.Join(t.TempDir(), "webhook.db")
	s := openT(t, path)
	if err := s.CreateToken(context.Background(), &store.Token{ID: "tok_1", Hash: []byte("h")}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openT(t, path)
	if _, err := s.TokenByHash(context.Background(), []byte("h")); err != nil {
		t.Fatal(err)
	}
}

func TestOpenBadAddress(t *testing.T) {
	for _, addr := range []string{"mysql://x", "sqlite:", "file.db"} {
		if _, err := store.Open(context.Background(), addr); !errors.Is(err, store.ErrBadAddress) {
			t.Errorf("Open(%q) = %v, want ErrBadAddress", addr, err)
		}
	}
}

// firstTokenOnce opens n stores on one database at addr and has each
// create its first token at the same moment: exactly one must succeed.
func firstTokenOnce(t *testing.T, addr string, n int) {
	t.Helper()
	stores := make([]store.Store, n)
	for i := range stores {
		stores[i] = openT(t, addr)
	}
	start := make(chan struct{})
	created := make(chan bool, n)
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ok, err := s.CreateFirstToken(context.Background(), &store.Token{ID: fmt.Sprint("tok_", i), Name: "admin", Hash: []byte(fmt.Sprint("hash", i))})
			if err != nil {
				t.Error(err)
			}
			created <- ok
		}()
	}
	close(start)
	wg.Wait()
	close(created)
	n = 0
	for ok := range created {
		if ok {
			n++
		}
	}
	list, err := stores[0].ListTokens(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || len(list) != 1 {
		t.Fatalf("%d stores created their first token, %d tokens stored; want 1 and 1", n, len(list))
	}
}

// TestFirstTokenOncePostgres: dispatchers starting together on a new
// PostgreSQL database create one admin token between them (rounds on
// fresh databases, four stores each).
func TestFirstTokenOncePostgres(t *testing.T) {
	c := pgtest.Start(t, "fsync=off")
	for range 10 {
		firstTokenOnce(t, c.NewDatabase(t), 4)
	}
}

// TestFirstTokenOnceSQLite: the same on one SQLite file.
func TestFirstTokenOnceSQLite(t *testing.T) {
	for i := range 5 {
		firstTokenOnce(t, "sqlite:"+filepath.Join(t.TempDir(), fmt.Sprint("first", i, ".db")), 4)
	}
}

// TestPurgeTogetherPostgres: dispatchers sharing PostgreSQL purging at
// the same moment take disjoint batches (SKIP LOCKED): between them they
// delete every old event once, without waiting for each other's locks or
// deadlocking.
func TestPurgeTogetherPostgres(t *testing.T) {
	c := pgtest.Start(t, "fsync=off")
	addr := c.NewDatabase(t)
	stores := []store.Store{openT(t, addr), openT(t, addr), openT(t, addr)}
	ctx := context.Background()
	t0 := time.Unix(1_800_000_000, 0)
	if err := stores[0].CreateEndpoint(ctx, &store.Endpoint{ID: "ep_1", URL: "http://127.0.0.1:1/", Enabled: true, Created: t0, Updated: t0}); err != nil {
		t.Fatal(err)
	}
	const events = 600
	for i := range events {
		ev := &store.Event{ID: fmt.Sprintf("msg_%04d", i), Type: "t", Payload: []byte("{}"), Created: t0.Add(time.Duration(i) * time.Millisecond)}
		if _, err := stores[0].InsertEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := stores[0].Claim(ctx, store.ClaimRequest{Owner: "a", Now: t0.Add(time.Hour), Lease: time.Minute, Limit: events})
	if err != nil || len(jobs) != events {
		t.Fatalf("claimed %d: %v", len(jobs), err)
	}
	var cs []*store.Completion
	for _, j := range jobs {
		cs = append(cs, &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: store.StatusSucceeded, EndpointOK: true,
			Attempt: store.Attempt{ID: "atmpt_" + j.Event.ID, DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: "ep_1", Started: t0, StatusCode: 204}})
	}
	if err := stores[0].Complete(ctx, cs...); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		total int
		wg    sync.WaitGroup
	)
	for _, s := range stores {
		wg.Go(func() {
			for {
				n, err := s.Purge(ctx, t0.Add(time.Hour), 50)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				total += n
				mu.Unlock()
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	if evs, err := stores[0].ListEvents(ctx, time.Time{}, "", 10); total != events || len(evs) != 0 || err != nil {
		t.Fatalf("%d purged, %d events left (%v); want %d and none", total, len(evs), err, events)
	}
}

// reopenWithoutResend makes the database at addr (driver, dsn) as an
// earlier version left it, without deliveries.resend nor
// endpoints.rate_tat, and opens it: the store adds the columns, a resend
// of a leased delivery is kept and rate-limit slots are taken.
func reopenWithoutResend(t *testing.T, addr, driver, dsn string) {
	ctx := context.Background()
	s := openT(t, addr)
	s.Close()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, drop := range []string{`ALTER TABLE deliveries DROP COLUMN resend`, `ALTER TABLE endpoints DROP COLUMN rate_tat`} {
		if _, err := db.ExecContext(ctx, drop); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s = openT(t, addr)
	t0 := time.Unix(1_800_000_000, 0)
	if err := s.CreateEndpoint(ctx, &store.Endpoint{ID: "ep_1", URL: "http://127.0.0.1:1/", Enabled: true, Created: t0, Updated: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InsertEvent(ctx, &store.Event{ID: "msg_1", Type: "t", Payload: []byte("{}"), Created: t0}); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Claim(ctx, store.ClaimRequest{Owner: "a", Now: t0, Lease: time.Minute, Limit: 1})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claimed %d: %v", len(jobs), err)
	}
	if _, err := s.Resend(ctx, "msg_1", "", t0); err != nil {
		t.Fatal(err)
	}
	j := jobs[0]
	if err := s.Complete(ctx, &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: store.StatusSucceeded,
		Attempt: store.Attempt{ID: "atmpt_1", DeliveryID: j.Delivery.ID, EventID: "msg_1", EndpointID: "ep_1", Started: t0, StatusCode: 200}}); err != nil {
		t.Fatal(err)
	}
	if ds, err := s.ListDeliveries(ctx, "msg_1"); err != nil || len(ds) != 1 || ds[0].Status != store.StatusPending {
		t.Fatalf("deliveries %+v %v, want the resent one pending", ds, err)
	}
	if took, _, err := s.TakeRateSlots(ctx, "ep_1", 1, 2, t0); err != nil || took != 1 {
		t.Fatalf("rate slots of an endpoint made before rate_tat: took %d of 2 at 1/s (%v), want 1", took, err)
	}
}

func TestAddColumnsSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "webhook.db")
	reopenWithoutResend(t, "sqlite:"+path, "sqlite", path)
}

func TestAddColumnsPostgres(t *testing.T) {
	addr := pgtest.Start(t, "fsync=off").NewDatabase(t)
	reopenWithoutResend(t, addr, "pgx", addr)
}

// fanOutAcrossStores: an endpoint changed through one store (another
// dispatcher, or the API in another process) is followed by the next
// event another store on the same database stores, whose filters were
// read before.
func fanOutAcrossStores(t *testing.T, addr string) {
	ctx := context.Background()
	a, b := openT(t, addr), openT(t, addr)
	t0 := time.Unix(1_800_000_000, 0)
	e := &store.Endpoint{ID: "ep_1", URL: "http://127.0.0.1:1/", EventTypes: []string{"x"}, Enabled: true, Created: t0, Updated: t0}
	if err := a.CreateEndpoint(ctx, e); err != nil {
		t.Fatal(err)
	}
	deliveries := func(when, typ string, want int) {
		t.Helper()
		ev := &store.Event{ID: store.NewID("msg", t0), Type: typ, Payload: []byte("{}"), Created: t0}
		if _, err := a.InsertEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if ds, err := a.ListDeliveries(ctx, ev.ID); err != nil || len(ds) != want {
			t.Fatalf("%s: an event of type %s: deliveries %+v %v, want %d", when, typ, ds, err, want)
		}
	}
	deliveries("at first", "y", 0)
	e.EventTypes = []string{"y"}
	if err := b.UpdateEndpoint(ctx, e); err != nil {
		t.Fatal(err)
	}
	deliveries("filter changed by the other store", "y", 1)
	if err := b.CreateEndpoint(ctx, &store.Endpoint{ID: "ep_2", URL: "http://127.0.0.1:1/", Enabled: true, Created: t0, Updated: t0}); err != nil {
		t.Fatal(err)
	}
	deliveries("an endpoint created by the other store", "y", 2)
}

func TestFanOutAcrossStoresSQLite(t *testing.T) {
	fanOutAcrossStores(t, "sqlite:"+filepath.Join(t.TempDir(), "webhook.db"))
}

func TestFanOutAcrossStoresPostgres(t *testing.T) {
	fanOutAcrossStores(t, pgtest.Start(t, "fsync=off").NewDatabase(t))
}

// TestPostgresLeaseClockSkew: on PostgreSQL a lease is measured by the
// database's clock, so a dispatcher whose clock runs 30 s ahead of the
// one holding a delivery (its lease 20 s) does not take the delivery
// while the first attempts it: with leases by each claimer's clock it
// found the lease expired at once, and both attempted it together. The
// claimer's clock still decides what is due.
func TestPostgresLeaseClockSkew(t *testing.T) {
	c := pgtest.Start(t, "fsync=off")
	s := openT(t, c.NewDatabase(t))
	ctx := context.Background()
	now := time.Now()
	if err := s.CreateEndpoint(ctx, &store.Endpoint{ID: "ep_1", URL: "http://127.0.0.1:1/", Enabled: true, Created: now, Updated: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InsertEvent(ctx, &store.Event{ID: "msg_1", Type: "t", Payload: []byte(`{}`), Created: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InsertEvent(ctx, &store.Event{ID: "msg_2", Type: "t", Payload: []byte(`{}`), Created: now.Add(10 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	claim := func(owner string, at time.Time) []*store.Job {
		t.Helper()
		jobs, err := s.Claim(ctx, store.ClaimRequest{Owner: owner, Now: at, Lease: 20 * time.Second, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	a := claim("a", time.Now())
	if len(a) != 1 || a[0].Event.ID != "msg_1" {
		t.Fatalf("a claimed %d jobs, want msg_1", len(a))
	}
	b := claim("b", time.Now().Add(30*time.Second))
	if len(b) != 1 || b[0].Event.ID != "msg_2" {
		ids := []string{}
		for _, j := range b {
			ids = append(ids, j.Event.ID)
		}
		t.Fatalf("b, its clock 30 s ahead, claimed %v while a holds msg_1; want only msg_2 (due by b's clock)", ids)
	}
	// a's completion is recorded under the lease its claim returned.
	if err := s.Complete(ctx, &store.Completion{Owner: "a", LeaseUntil: a[0].LeaseUntil, Status: store.StatusSucceeded, EndpointOK: true,
		Attempt: store.Attempt{ID: "atmpt_1", DeliveryID: a[0].Delivery.ID, EventID: "msg_1", EndpointID: "ep_1", Started: now, StatusCode: 200}}); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresRateClockSkew: on PostgreSQL an endpoint's rate-limit
// slots are measured by the database's clock, as leases are: a
// dispatcher whose clock runs an hour ahead of another's finds the
// slots the other just took taken, rather than a second's worth saved
// up since, and waits for the next by its own clock.
func TestPostgresRateClockSkew(t *testing.T) {
	s := openT(t, pgtest.Start(t, "fsync=off").NewDatabase(t))
	ctx := context.Background()
	now := time.Now()
	if err := s.CreateEndpoint(ctx, &store.Endpoint{ID: "ep_1", URL: "http://127.0.0.1:1/", Enabled: true, RateLimit: 2, Created: now, Updated: now}); err != nil {
		t.Fatal(err)
	}
	if took, _, err := s.TakeRateSlots(ctx, "ep_1", 2, 2, time.Now()); err != nil || took != 2 {
		t.Fatalf("took %d of 2 slots at 2/s (%v), want 2", took, err)
	}
	ahead := time.Now().Add(time.Hour)
	took, next, err := s.TakeRateSlots(ctx, "ep_1", 2, 2, ahead)
	if err != nil || took != 0 {
		t.Fatalf("a dispatcher an hour ahead took %d of 2 slots at 2/s just after another took 2 (%v), want 0", took, err)
	}
	if wait := next.Sub(ahead); wait <= 0 || wait > 500*time.Millisecond {
		t.Fatalf("the next slot %v after the clock an hour ahead, want within 500ms", wait)
	}
}
