package dispatch

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook"
	"github.com/brokerless/brokerless/webhook/store"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

var loopback = webhook.AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

func sqliteStore(t *testing.T) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "webhook.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newSecret(t *testing.T) webhook.Secret {
	t.Helper()
	s, err := webhook.NewSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// addEndpoint creates an enabled endpoint for url with a new secret.
func addEndpoint(t *testing.T, s store.Store, id, url string, now time.Time) webhook.Secret {
	t.Helper()
	sec := newSecret(t)
	err := s.CreateEndpoint(context.Background(), &store.Endpoint{ID: id, URL: url, Enabled: true,
		Secrets: []store.Secret{{Secret: sec.String()}}, Created: now, Updated: now})
	if err != nil {
		t.Fatal(err)
	}
	return sec
}

func addEvent(t *testing.T, s store.Store, typ string, now time.Time) *store.Event {
	t.Helper()
	ev := NewEvent(typ, json.RawMessage(`{"n":1}`), "", now)
	if _, err := s.InsertEvent(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// request is what a test receiver got.
type request struct {
	header http.Header
	body   []byte
}

// receiver is a test HTTP server answering with the next of its
// handlers (the last one repeats) and keeping every request.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	got      []request
	handlers []http.HandlerFunc
}

func newReceiver(t *testing.T, handlers ...http.HandlerFunc) *receiver {
	r := &receiver{handlers: handlers}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, request{req.Header.Clone(), body})
		h := r.handlers[min(len(r.got), len(r.handlers))-1]
		r.mu.Unlock()
		h(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.got...)
}

func status(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

// hold is a receiver's handler that tells started a request came, then
// holds it until answer gives the word (a value sent, or closed), and
// answers 200: an attempt under way, for as long as a test needs.
func hold(started chan<- struct{}, answer <-chan struct{}) http.HandlerFunc {
	return func(http.ResponseWriter, *http.Request) {
		started <- struct{}{}
		<-answer
	}
}

// deliverDueInBackground runs d.DeliverDue on a goroutine of its own;
// the channel gets its error.
func deliverDueInBackground(d *Dispatcher) <-chan error {
	done := make(chan error, 1)
	go func() { _, err := d.DeliverDue(context.Background()); done <- err }()
	return done
}

// newDispatcher returns a dispatcher on s with the clock c, no jitter
// (Rand 0.5) and loopback allowed.
func newDispatcher(t *testing.T, s store.Store, c *clock, mod ...func(*Config)) *Dispatcher {
	t.Helper()
	cfg := Config{Store: s, Addresses: loopback, Now: c.Now, Rand: func() float64 { return 0.5 }}
	for _, m := range mod {
		m(&cfg)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func deliverDue(t *testing.T, d *Dispatcher, want int) {
	t.Helper()
	n, err := d.DeliverDue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Fatalf("%d attempts, want %d", n, want)
	}
}
