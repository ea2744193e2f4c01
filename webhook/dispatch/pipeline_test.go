package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// gatedStore is a store whose Complete waits until gate is closed, and
// then reports each completion written on written.
type gatedStore struct {
	store.Store
	gate    chan struct{}
	written chan struct{}
}

func (g *gatedStore) Complete(ctx context.Context, cs ...*store.Completion) error {
	<-g.gate
	err := g.Store.Complete(ctx, cs...)
	for range cs {
		g.written <- struct{}{}
	}
	return err
}

// TestAttemptsGoOnWhileRecording: a worker hands its attempt's record to
// the writer and goes on to its next attempt: with the store's writes
// held back, every queued delivery of the endpoint is still attempted,
// and every attempt is recorded once the writes go through.
func TestAttemptsGoOnWhileRecording(t *testing.T) {
	const events = 5
	base := sqliteStore(t)
	s := &gatedStore{Store: base, gate: make(chan struct{}), written: make(chan struct{}, events)}
	got := make(chan struct{}, events)
	rcv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		got <- struct{}{}
	})
	now := time.Now()
	addEndpoint(t, base, "ep_1", rcv.URL, now)
	for range events {
		addEvent(t, base, "t", now)
	}
	d, err := New(Config{Store: s, Addresses: loopback, Concurrency: 1, QueueDepth: 8})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, d)
	deadline := time.After(time.Minute)
	for i := range events {
		select {
		case <-got:
		case <-deadline:
			close(s.gate)
			stop()
			t.Fatalf("%d of %d deliveries attempted while the first record waited to be written", i, events)
		}
	}
	close(s.gate)
	for i := range events {
		select {
		case <-s.written:
		case <-deadline:
			stop()
			t.Fatalf("%d of %d attempts recorded once the writes went through", i, events)
		}
	}
	stop()
	if st := d.Stats(); st.Attempts != events || st.Succeeded != events || st.StoreErrors != 0 {
		t.Fatalf("stats %+v", st)
	}
	if next, ok, err := base.NextDue(context.Background()); err != nil || ok {
		t.Fatalf("after every record was written, NextDue = %v %v %v: deliveries left pending", next, ok, err)
	}
}

// claimSpy reports each claim's request and how many jobs it got.
type claimSpy struct {
	store.Store
	claims chan claimSeen
}

type claimSeen struct {
	per, jobs int
}

func (c *claimSpy) Claim(ctx context.Context, r store.ClaimRequest) ([]*store.Job, error) {
	jobs, err := c.Store.Claim(ctx, r)
	c.claims <- claimSeen{r.PerEndpoint, len(jobs)}
	return jobs, err
}

// TestRefillBeforeQueueEmpties: an endpoint's queue is refilled once
// half of it is gone, while deliveries are still queued, so its workers
// never wait for a claim; the refill asks for the endpoint's room. With
// Concurrency 1 and QueueDepth 4 the first claim takes 5; once two
// attempts have ended (3 held: the third in flight, 2 queued), the next
// claim asks for 2, while the third attempt is still in flight.
func TestRefillBeforeQueueEmpties(t *testing.T) {
	base := sqliteStore(t)
	spy := &claimSpy{Store: base, claims: make(chan claimSeen, 64)}
	release, quit := make(chan struct{}), make(chan struct{})
	started := make(chan struct{}, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		started <- struct{}{}
		select {
		case <-release:
			w.WriteHeader(http.StatusNoContent)
		case <-quit:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	var once sync.Once
	stopReceiver := func() { once.Do(func() { close(quit) }) }
	defer stopReceiver()
	now := time.Now()
	addEndpoint(t, base, "ep_1", srv.URL, now)
	for range 20 {
		addEvent(t, base, "t", now)
	}
	d, err := New(Config{Store: spy, Addresses: loopback, Concurrency: 1, QueueDepth: 4})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, d)
	defer stop()
	defer stopReceiver() // (runs before stop: the attempts in flight end)
	deadline := time.After(time.Minute)
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no %s before the deadline", what)
		}
	}
	nextClaim := func(what string) claimSeen {
		t.Helper()
		for {
			select {
			case c := <-spy.claims:
				if c.jobs > 0 {
					return c
				}
			case <-deadline:
				t.Fatalf("no %s before the deadline", what)
			}
		}
	}
	if c := nextClaim("first claim"); c.per != 5 || c.jobs != 5 {
		t.Fatalf("first claim asked for %d of the endpoint and got %d, want 5 and 5 (Concurrency + QueueDepth)", c.per, c.jobs)
	}
	for range 2 {
		wait(started, "attempt")
		release <- struct{}{}
	}
	wait(started, "third attempt")
	// 3 held (1 in flight, 2 queued): the refill comes now.
	if c := nextClaim("refill while deliveries are still queued"); c.per != 2 || c.jobs != 2 {
		t.Fatalf("refill asked for %d and got %d, want 2 and 2 (the endpoint's room)", c.per, c.jobs)
	}
}

// leaseStore records the lease of every job claimed and of every
// completion written.
type leaseStore struct {
	store.Store
	mu      sync.Mutex
	claimed map[string]time.Time // delivery → the claim's LeaseUntil
	written map[string]time.Time // delivery → its completion's LeaseUntil
}

func (s *leaseStore) Claim(ctx context.Context, r store.ClaimRequest) ([]*store.Job, error) {
	jobs, err := s.Store.Claim(ctx, r)
	s.mu.Lock()
	for _, j := range jobs {
		s.claimed[j.Delivery.ID] = j.LeaseUntil
	}
	s.mu.Unlock()
	return jobs, err
}

func (s *leaseStore) Complete(ctx context.Context, cs ...*store.Completion) error {
	s.mu.Lock()
	for _, c := range cs {
		s.written[c.Attempt.DeliveryID] = c.LeaseUntil
	}
	s.mu.Unlock()
	return s.Store.Complete(ctx, cs...)
}

// TestCompletionNamesItsLease: an attempt's completion carries the
// lease its claim took, so that a record written late (the writer held
// up past the lease) is refused once the dispatcher claimed the
// delivery again, instead of ending the newer lease under a second
// attempt (store suite, CompleteStaleLease).
func TestCompletionNamesItsLease(t *testing.T) {
	const events = 3
	base := sqliteStore(t)
	s := &leaseStore{Store: base, claimed: map[string]time.Time{}, written: map[string]time.Time{}}
	rcv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	now := time.Now()
	addEndpoint(t, base, "ep_1", rcv.URL, now)
	for range events {
		addEvent(t, base, "t", now)
	}
	d, err := New(Config{Store: s, Addresses: loopback})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.DeliverDue(context.Background()); err != nil || n != events {
		t.Fatalf("DeliverDue = %d, %v; want %d", n, err, events)
	}
	if len(s.written) != events {
		t.Fatalf("%d completions written, want %d", len(s.written), events)
	}
	for id, lease := range s.written {
		if want := s.claimed[id]; want.IsZero() || !lease.Equal(want) {
			t.Errorf("delivery %s: completion's lease %v, claim's %v", id, lease, want)
		}
	}
}

// nextDueSpy reports the endpoints each NextDue skips.
type nextDueSpy struct {
	store.Store
	skips chan []string
}

func (s *nextDueSpy) NextDue(ctx context.Context, skip ...string) (time.Time, bool, error) {
	select {
	case s.skips <- skip:
	default:
	}
	return s.Store.NextDue(ctx, skip...)
}

// TestNextDueSkipsBusyEndpoints: when a poll finds nothing to claim
// because the endpoint with a backlog holds a full queue, the
// dispatcher asks the store when the next delivery is due leaving that
// endpoint out (its workers wake the dispatcher when its queue runs
// low): NextDue reads every pending delivery of the endpoints it looks
// at, the whole backlog otherwise, at every such poll.
func TestNextDueSkipsBusyEndpoints(t *testing.T) {
	base := sqliteStore(t)
	spy := &nextDueSpy{Store: base, skips: make(chan []string, 1)}
	quit := make(chan struct{})
	rcv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		<-quit
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	now := time.Now()
	addEndpoint(t, base, "ep_1", rcv.URL, now)
	for range 10 {
		addEvent(t, base, "t", now)
	}
	d, err := New(Config{Store: spy, Addresses: loopback, Concurrency: 1, QueueDepth: 2, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, d)
	defer stop()
	defer close(quit) // (runs before stop: the attempt in flight ends)
	deadline := time.After(time.Minute)
	for {
		select {
		case skip := <-spy.skips:
			if slices.Contains(skip, "ep_1") {
				return
			}
			t.Logf("NextDue skipping %q", skip)
		case <-deadline:
			t.Fatal("NextDue never skipped the endpoint working through its backlog")
		}
	}
}

// flakyStore fails its first fails Complete calls, as a database
// restarting or a connection lost would, writing nothing.
type flakyStore struct {
	store.Store
	mu    sync.Mutex
	fails int
}

var errConnLost = errors.New("connection lost")

func (s *flakyStore) Complete(ctx context.Context, cs ...*store.Completion) error {
	s.mu.Lock()
	fail := s.fails > 0
	s.fails--
	s.mu.Unlock()
	if fail {
		return errConnLost
	}
	return s.Store.Complete(ctx, cs...)
}

// TestRecordRetriedAfterStoreError: a completion whose write fails (the
// database restarting, a connection lost) is written again while its
// lease holds, rather than dropped: dropped, every delivery of the batch,
// though answered 2xx, stayed leased and was attempted again once the
// lease expired (a PostgreSQL restart in the middle of a drain of 400
// deliveries delivered 170-240 of them twice).
func TestRecordRetriedAfterStoreError(t *testing.T) {
	base, c := sqliteStore(t), &clock{t: t0}
	s := &flakyStore{Store: base, fails: 2}
	rcv := newReceiver(t, status(http.StatusNoContent))
	addEndpoint(t, base, "ep_1", rcv.URL, t0)
	var evs []*store.Event
	for range 3 {
		evs = append(evs, addEvent(t, base, "t", t0))
	}
	d := newDispatcher(t, s, c)
	deliverDue(t, d, 3)
	for _, ev := range evs {
		ds, _ := base.ListDeliveries(context.Background(), ev.ID)
		if len(ds) != 1 || ds[0].Status != store.StatusSucceeded || ds[0].Attempts != 1 {
			t.Errorf("delivery %+v: want succeeded after 1 attempt", ds[0])
		}
	}
	// Past every lease, nothing is attempted again.
	c.Set(t0.Add(time.Hour))
	deliverDue(t, d, 0)
	if n := len(rcv.requests()); n != 3 {
		t.Errorf("%d requests for 3 events", n)
	}
	if st := d.Stats(); st.StoreErrors != 2 {
		t.Errorf("stats %+v, want the 2 failed writes counted", st)
	}
}

// TestClockStepKeepsLease: the wall clock stepping forward past the lease
// of an attempt in flight (NTP, a virtual machine resumed) lets the
// dispatcher's next claim take the delivery again; it does not attempt
// it a second time beside the first, and the first attempt's record,
// under the lease the claim renewed, is written.
func TestClockStepKeepsLease(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	arrived, release := make(chan struct{}, 2), make(chan struct{})
	rcv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		arrived <- struct{}{}
		<-release
		w.WriteHeader(http.StatusNoContent)
	})
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	ev := addEvent(t, s, "t", t0)
	d := newDispatcher(t, s, c)
	ctx := context.Background()
	if n, _, _, _, err := d.poll(ctx); err != nil || n != 1 {
		t.Fatalf("first poll: %d %v", n, err)
	}
	select {
	case <-arrived:
	case <-time.After(time.Minute):
		t.Fatal("no attempt in a minute")
	}
	c.Set(t0.Add(2 * time.Minute)) // past the lease (40 s)
	if n, _, _, _, err := d.poll(ctx); err != nil || n != 0 {
		t.Errorf("poll after the clock step: %d queued, %v; want none", n, err)
	}
	close(release)
	d.wg.Wait()
	if n := len(rcv.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	ds, _ := s.ListDeliveries(ctx, ev.ID)
	if len(ds) != 1 || ds[0].Status != store.StatusSucceeded || ds[0].Attempts != 1 {
		t.Errorf("delivery %+v, want succeeded at its first attempt", *ds[0])
	}
	if st := d.Stats(); st.LeaseLost != 0 || st.Attempts != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestInFlightBytesBounded: the payloads a dispatcher holds (queued or
// being attempted) stay within MaxInFlightBytes, whatever their count
// (a --source record can be a megabyte, and 1,024 of them a gigabyte),
// and a claim asks for no more than the room left at the size of the
// payloads seen; the deliveries left out are claimed as room frees up,
// every one attempted once. Twelve payloads of 1 MiB (and an envelope),
// a bound of 4 MiB, which the fourth reaches: all 12 were claimed and
// queued at once.
func TestInFlightBytesBounded(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	arrived, release := make(chan struct{}, 16), make(chan struct{})
	rcv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		arrived <- struct{}{}
		<-release
		w.WriteHeader(http.StatusNoContent)
	})
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	data, _ := json.Marshal(strings.Repeat("x", 1<<20))
	for range 12 {
		if _, err := s.InsertEvent(context.Background(), NewEvent("t", data, "", t0)); err != nil {
			t.Fatal(err)
		}
	}
	spy := &claimSpy{Store: s, claims: make(chan claimSeen, 64)}
	d := newDispatcher(t, spy, c, func(cfg *Config) { cfg.MaxInFlightBytes = 4 << 20 })
	ctx := context.Background()
	if n, _, _, _, err := d.poll(ctx); err != nil || n != 4 {
		t.Fatalf("first poll queued %d (%v), want 4", n, err)
	}
	for range 4 {
		<-arrived
	}
	<-spy.claims
	if n, _, _, _, err := d.poll(ctx); err != nil || n != 0 {
		t.Fatalf("second poll, no room: queued %d (%v), want 0", n, err)
	}
	select {
	case c := <-spy.claims:
		t.Errorf("a claim of %d with no room", c.jobs)
	default:
	}
	close(release)
	d.wg.Wait()
	if n, err := d.DeliverDue(ctx); err != nil || n != 8 {
		t.Fatalf("the 8 left: %d attempted (%v)", n, err)
	}
	if n := len(rcv.requests()); n != 12 {
		t.Errorf("%d requests, want 12", n)
	}
	if st := d.Stats(); st.Succeeded != 12 {
		t.Errorf("stats %+v", st)
	}
}

// TestInFlightBytesWake: a dispatcher that stopped claiming for the
// bytes it holds claims again as soon as attempts finish and free room,
// not at its next poll (an hour here): 12 payloads of 1 MiB, a bound of
// 4 MiB, all delivered.
func TestInFlightBytesWake(t *testing.T) {
	s := sqliteStore(t)
	rcv, srv := newCounter(t, 0)
	now := time.Now()
	addEndpoint(t, s, "ep_1", srv.URL, now)
	data, _ := json.Marshal(strings.Repeat("x", 1<<20))
	for range 12 {
		if _, err := s.InsertEvent(context.Background(), NewEvent("t", data, "", now)); err != nil {
			t.Fatal(err)
		}
	}
	d, err := New(Config{Store: s, Addresses: loopback, MaxInFlightBytes: 4 << 20, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, d)
	defer stop()
	rcv.await(t, 12)
}
