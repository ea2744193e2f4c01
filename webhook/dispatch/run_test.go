package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
	"github.com/brokerless/brokerless/webhook/store/pgtest"
)

// counter is a receiver that counts the deliveries of each webhook-id
// to each path (one per endpoint), fails the test if one is in two
// requests at once, and signals each first delivery on fresh.
type counter struct {
	t        *testing.T
	mu       sync.Mutex
	count    map[string]int
	inFlight map[string]bool
	fresh    chan string
	delay    time.Duration
	// With holdFor set, requests wait until requests of every owner
	// named in holdFor (the header testOwner) have arrived, or 10 s.
	holdFor []string
	seen    map[string]bool
	allSeen chan struct{}
}

// testOwner is the request header that ownerTransport sets.
const testOwner = "X-Test-Owner"

// ownerTransport names the dispatcher of each request in testOwner.
type ownerTransport struct {
	owner string
	next  http.RoundTripper
}

func (o ownerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(testOwner, o.owner)
	return o.next.RoundTrip(r)
}

// hold holds requests until each owner has sent one (see holdFor).
func (c *counter) hold(r *http.Request) {
	c.mu.Lock()
	if c.seen == nil {
		c.seen, c.allSeen = map[string]bool{}, make(chan struct{})
	}
	c.seen[r.Header.Get(testOwner)] = true
	all := true
	for _, o := range c.holdFor {
		all = all && c.seen[o]
	}
	if all && c.allSeen != nil {
		select {
		case <-c.allSeen:
		default:
			close(c.allSeen)
		}
	}
	ch := c.allSeen
	c.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
	}
}

func newCounter(t *testing.T, delay time.Duration) (*counter, *httptest.Server) {
	c := &counter{t: t, count: map[string]int{}, inFlight: map[string]bool{}, fresh: make(chan string, 100000), delay: delay}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Path + " " + r.Header.Get("webhook-id")
		c.mu.Lock()
		if c.inFlight[id] {
			c.t.Errorf("webhook-id %s (path, webhook-id) delivered twice at the same time", id)
		}
		c.inFlight[id] = true
		c.mu.Unlock()
		if len(c.holdFor) > 0 {
			c.hold(r)
		}
		if c.delay > 0 {
			time.Sleep(c.delay) // a receiver that takes its time
		}
		c.mu.Lock()
		delete(c.inFlight, id)
		c.count[id]++
		first := c.count[id] == 1
		c.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		if first {
			c.fresh <- id
		}
	}))
	t.Cleanup(srv.Close)
	return c, srv
}

// await waits for n distinct ids.
func (c *counter) await(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(time.Minute)
	for i := range n {
		select {
		case <-c.fresh:
		case <-deadline:
			t.Fatalf("%d of %d events delivered before the deadline", i, n)
		}
	}
}

func run(t *testing.T, d *Dispatcher) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	return func() { cancel(); <-done }
}

// TestIsolation: an endpoint that hangs until the timeout holds only its
// own Concurrency slots; every event to a fast endpoint beside it is
// delivered while the slow one's first attempts are still hanging.
func TestIsolation(t *testing.T) {
	s := sqliteStore(t)
	const events, concurrency = 50, 2
	release := make(chan struct{})
	arrived := make(chan struct{}, events)
	var (
		mu          sync.Mutex
		hung, worst int
	)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hung++
		worst = max(worst, hung)
		mu.Unlock()
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		mu.Lock()
		hung--
		mu.Unlock()
	}))
	defer slow.Close()
	defer close(release)
	fast, fastSrv := newCounter(t, 0)
	now := time.Now()
	addEndpoint(t, s, "ep_slow", slow.URL, now)
	addEndpoint(t, s, "ep_fast", fastSrv.URL, now)
	for range events {
		addEvent(t, s, "t", now)
	}
	d, err := New(Config{Store: s, Addresses: loopback, Timeout: time.Hour, Concurrency: concurrency})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, d)
	fast.await(t, events)
	// The fast endpoint may be done before the slow one's second attempt
	// has reached its server: wait for both slots to be taken, then stop.
	for i := range concurrency {
		select {
		case <-arrived:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of the hanging endpoint's %d attempts reached it in 30s", i, concurrency)
		}
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	if worst != concurrency {
		t.Errorf("the hanging endpoint had up to %d attempts in flight, want %d", worst, concurrency)
	}
}

// TestTwoDispatchersPostgres: two dispatchers on one PostgreSQL database
// deliver every event once: never the same delivery twice at once, and
// (every attempt succeeding) never twice at all.
func TestTwoDispatchersPostgres(t *testing.T) {
	cluster := pgtest.Start(t, "fsync=off")
	const events = 300
	open := func() store.Store {
		s, err := store.Open(context.Background(), cluster.URL("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s1, s2 := open(), open()
	rcv, srv := newCounter(t, time.Millisecond)
	// The first requests wait until both dispatchers have sent one, so
	// that the first to start cannot do all the work on a loaded
	// machine, and the test is always about two.
	rcv.holdFor = []string{"d0", "d1"}
	now := time.Now()
	addEndpoint(t, s1, "ep_1", srv.URL, now)
	addEndpoint(t, s1, "ep_2", srv.URL+"/2", now)
	for range events / 2 {
		addEvent(t, s1, "t", now)
	}
	var ds []*Dispatcher
	for i, s := range []store.Store{s1, s2} {
		owner := fmt.Sprint("d", i)
		client := &http.Client{Transport: ownerTransport{owner, loopback.Transport()},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		d, err := New(Config{Store: s, Addresses: loopback, Client: client, Concurrency: 4, QueueDepth: 1, BatchSize: 10, Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
		defer run(t, d)()
	}
	// Half the events go in while both dispatchers run.
	for range events / 2 {
		addEvent(t, s2, "t", time.Now())
		ds[0].Notify()
		ds[1].Notify()
	}
	rcv.await(t, 2*events)
	for _, d := range ds {
		t.Logf("%s: %+v", d.cfg.Owner, d.Stats())
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for id, n := range rcv.count {
		if n != 1 {
			t.Errorf("%s delivered %d times, want once", id, n)
		}
	}
	if ds[0].Stats().Attempts == 0 || ds[1].Stats().Attempts == 0 {
		t.Errorf("one dispatcher did all the work: %+v %+v", ds[0].Stats(), ds[1].Stats())
	}
}

// recordSpy counts the completions written and closes all once want are.
type recordSpy struct {
	store.Store
	mu      sync.Mutex
	written int
	want    int
	all     chan struct{}
}

func (s *recordSpy) Complete(ctx context.Context, cs ...*store.Completion) error {
	err := s.Store.Complete(ctx, cs...)
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range cs {
		if !c.LeaseLost {
			s.written++
		}
	}
	if s.written == s.want {
		close(s.all)
	}
	return err
}

// TestPostgresRestart: PostgreSQL restarted in the middle of a drain
// (every connection ended): the dispatcher carries on once it is back,
// every event is delivered and its attempt recorded, none twice at once,
// and none twice at all (the attempts made while the server was down are
// recorded once it is back, not made again when their leases expire).
func TestPostgresRestart(t *testing.T) {
	cluster := pgtest.Start(t, "fsync=off")
	const events = 400
	base, err := store.Open(context.Background(), cluster.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	s := &recordSpy{Store: base, want: events, all: make(chan struct{})}
	rcv, srv := newCounter(t, 5*time.Millisecond)
	now := time.Now()
	addEndpoint(t, base, "ep_1", srv.URL, now)
	for range events {
		addEvent(t, base, "t", now)
	}
	d, err := New(Config{Store: s, Addresses: loopback, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, d)
	defer stop()
	rcv.await(t, events/4)
	cluster.Restart(t, "fast")
	rcv.await(t, events-events/4)
	select {
	case <-s.all:
	case <-time.After(time.Minute):
		t.Fatalf("%d of %d attempts recorded a minute after every event was delivered; stats %+v", s.written, events, d.Stats())
	}
	if _, pending, err := base.NextDue(context.Background()); err != nil || pending {
		t.Errorf("deliveries left pending (%v)", err)
	}
	t.Logf("stats %+v", d.Stats())
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for id, n := range rcv.count {
		if n != 1 {
			t.Errorf("%s delivered %d times, want once", id, n)
		}
	}
}

// signalTransport signals on got each response it returns.
type signalTransport struct {
	http.RoundTripper
	got chan struct{}
}

func (s signalTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.RoundTripper.RoundTrip(r)
	if err == nil {
		s.got <- struct{}{}
	}
	return resp, err
}

// TestStopKeepsAnswer: an attempt answered 2xx as the dispatcher stops
// (the status received, the body still coming) is recorded as the
// success it is, not released unrecorded for the next start to deliver
// again.
func TestStopKeepsAnswer(t *testing.T) {
	s := sqliteStore(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the body never ends
	}))
	defer srv.Close()
	now := time.Now()
	addEndpoint(t, s, "ep_1", srv.URL, now)
	ev := addEvent(t, s, "t", now)
	got := make(chan struct{}, 1)
	d, err := New(Config{Store: s, Addresses: loopback, Client: &http.Client{Transport: signalTransport{loopback.Transport(), got},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, d)
	select {
	case <-got:
	case <-time.After(time.Minute):
		stop()
		t.Fatal("no response in a minute")
	}
	stop()
	ds, _ := s.ListDeliveries(context.Background(), ev.ID)
	if len(ds) != 1 || ds[0].Status != store.StatusSucceeded || ds[0].Attempts != 1 || ds[0].LastCode != 200 {
		t.Fatalf("delivery %+v, want succeeded at its first attempt", *ds[0])
	}
}
