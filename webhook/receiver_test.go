package webhook

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// recvFixture is a Receiver in front of a handler that records what it
// got and answers status.
type recvFixture struct {
	t      *testing.T
	secret Secret
	clock  *fakeClock
	rc     *Receiver
	mu     sync.Mutex
	got    []Delivery
	bodies []string
	status int
}

func newRecvFixture(t *testing.T, cfg ReceiverConfig) *recvFixture {
	f := &recvFixture{t: t, secret: newSecret(t, 1), clock: &fakeClock{now: time.Unix(1_700_000_000, 0)}, status: http.StatusNoContent}
	cfg.Verifier = &Verifier{Secrets: []Secret{f.secret}, Now: f.clock.Now}
	rc, err := NewReceiver(cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, ok := DeliveryFrom(r)
		if !ok {
			t.Error("next called without a Delivery")
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		f.mu.Lock()
		f.got = append(f.got, d)
		f.bodies = append(f.bodies, string(b))
		status := f.status
		f.mu.Unlock()
		w.WriteHeader(status)
	}))
	if err != nil {
		t.Fatal(err)
	}
	f.rc = rc
	return f
}

// post sends a request signed now (by secret when not zero) through the
// Receiver and returns the response.
func (f *recvFixture) post(id, body string, sign func(h http.Header)) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(body))
	SetHeaders(r.Header, id, f.clock.Now(), []byte(body), f.secret)
	if sign != nil {
		sign(r.Header)
	}
	w := httptest.NewRecorder()
	f.rc.ServeHTTP(w, r)
	return w
}

func TestReceiverStatuses(t *testing.T) {
	f := newRecvFixture(t, ReceiverConfig{MaxBodyBytes: 64})
	body := `{"type":"ping"}`
	for _, c := range []struct {
		name string
		mod  func(h http.Header)
		body string
		want int
	}{
		{"good", nil, body, http.StatusNoContent},
		{"missing id", func(h http.Header) { h.Del(HeaderID) }, body, http.StatusBadRequest},
		{"missing signature", func(h http.Header) { h.Del(HeaderSignature) }, body, http.StatusBadRequest},
		{"malformed timestamp", func(h http.Header) { h.Set(HeaderTimestamp, "yesterday") }, body, http.StatusBadRequest},
		{"old timestamp", func(h http.Header) { h.Set(HeaderTimestamp, "1699999000") }, body, http.StatusUnauthorized},
		{"future timestamp", func(h http.Header) { h.Set(HeaderTimestamp, "1700001000") }, body, http.StatusUnauthorized},
		{"wrong secret", func(h http.Header) {
			h.Set(HeaderSignature, newSecret(t, 2).Sign(h.Get(HeaderID), time.Unix(1_700_000_000, 0), []byte(body)))
		}, body, http.StatusUnauthorized},
		{"too large", nil, strings.Repeat("x", 65), http.StatusRequestEntityTooLarge},
		{"at the cap", nil, strings.Repeat("y", 64), http.StatusNoContent},
	} {
		w := f.post("msg_"+strings.ReplaceAll(c.name, " ", "_"), c.body, c.mod)
		if w.Code != c.want {
			t.Errorf("%s: status %d (%s), want %d", c.name, w.Code, strings.TrimSpace(w.Body.String()), c.want)
		}
	}
	// Missing headers are refused before the body is read.
	r := httptest.NewRequest(http.MethodPost, "/hook", failingReader{})
	w := httptest.NewRecorder()
	f.rc.ServeHTTP(w, r)
	if w.Code != http.StatusBadRequest {
		t.Errorf("unsigned with an unreadable body: status %d, want 400", w.Code)
	}
	w = httptest.NewRecorder()
	f.rc.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/hook", nil))
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "POST" {
		t.Errorf("GET: status %d Allow %q", w.Code, w.Header().Get("Allow"))
	}
	if len(f.got) != 2 || f.bodies[0] != body || f.got[0].ID != "msg_good" || !f.got[0].Timestamp.Equal(f.clock.Now()) || string(f.got[0].Body) != body {
		t.Fatalf("handed on %+v %q", f.got, f.bodies)
	}
	want := ReceiverStats{Accepted: 2, BadRequest: 4, Unauthorized: 3, TooLarge: 1, BadMethod: 1, Remembered: 2}
	if s := f.rc.Stats(); s != want {
		t.Fatalf("Stats = %+v, want %+v", s, want)
	}
}

// TestReceiverTooLargeChunked: a body with no Content-Length is cut at
// the cap too, over a real connection.
func TestReceiverTooLargeChunked(t *testing.T) {
	f := newRecvFixture(t, ReceiverConfig{MaxBodyBytes: 1000})
	srv := httptest.NewServer(f.rc)
	defer srv.Close()
	body := strings.Repeat("z", 5000)
	req, _ := http.NewRequest(http.MethodPost, srv.URL, io.MultiReader(strings.NewReader(body)))
	req.ContentLength = -1
	SetHeaders(req.Header, "msg_big", f.clock.Now(), []byte(body), f.secret)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || len(f.got) != 0 {
		t.Fatalf("status %d, handed on %d", resp.StatusCode, len(f.got))
	}
}

func TestReceiverDedup(t *testing.T) {
	f := newRecvFixture(t, ReceiverConfig{DedupTTL: time.Hour})
	if w := f.post("msg_1", "{}", nil); w.Code != http.StatusNoContent {
		t.Fatalf("first: %d", w.Code)
	}
	// The sender's retry: same id, fresh timestamp and signature.
	f.clock.Add(time.Minute)
	if w := f.post("msg_1", "{}", nil); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "duplicate") {
		t.Fatalf("retry of a handled id: %d %q", w.Code, w.Body.String())
	}
	if len(f.got) != 1 {
		t.Fatalf("handed on %d times", len(f.got))
	}
	// A failed handling is forgotten: the retry is handed on.
	f.status = http.StatusInternalServerError
	if w := f.post("msg_2", "{}", nil); w.Code != http.StatusInternalServerError {
		t.Fatalf("failing next: %d", w.Code)
	}
	f.status = http.StatusOK
	if w := f.post("msg_2", "{}", nil); w.Code != http.StatusOK || len(f.got) != 3 {
		t.Fatalf("retry after failure: %d, handed on %d", w.Code, len(f.got))
	}
	// Past the TTL the id is new again.
	f.clock.Add(time.Hour + time.Second)
	if w := f.post("msg_1", "{}", nil); w.Code != http.StatusOK || len(f.got) != 4 {
		t.Fatalf("after TTL: %d, handed on %d", w.Code, len(f.got))
	}
	if s := f.rc.Stats(); s.Duplicates != 1 || s.Failed != 1 || s.Accepted != 3 {
		t.Fatalf("Stats = %+v", s)
	}
}

// TestReceiverDedupBounded: past DedupSize, handled ids whose
// timestamps are out of tolerance are evicted, the earliest first.
func TestReceiverDedupBounded(t *testing.T) {
	f := newRecvFixture(t, ReceiverConfig{DedupSize: 3})
	for i := range 10 {
		f.clock.Add(DefaultTolerance + time.Second)
		f.post("msg_"+string(rune('a'+i)), "{}", nil)
	}
	s := f.rc.Stats()
	if s.Remembered != 3 || s.Evicted != 7 || s.Accepted != 10 {
		t.Fatalf("Stats = %+v, want 3 remembered, 7 evicted", s)
	}
	if w := f.post("msg_j", "{}", nil); !strings.Contains(w.Body.String(), "duplicate") {
		t.Fatal("newest id forgotten")
	}
	if w := f.post("msg_a", "{}", nil); w.Code != http.StatusNoContent {
		t.Fatalf("evicted id: %d, want handed on", w.Code)
	}
}

// TestReceiverInFlight: a second request with the id of one being
// handled gets 409 and is not handed on.
func TestReceiverInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	secret := newSecret(t, 1)
	rc, err := NewReceiver(ReceiverConfig{Verifier: &Verifier{Secrets: []Secret{secret}}}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	}))
	if err != nil {
		t.Fatal(err)
	}
	req := func() *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader([]byte("{}")))
		SetHeaders(r.Header, "msg_1", time.Now(), []byte("{}"), secret)
		return r
	}
	done := make(chan int)
	go func() {
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, req())
		done <- w.Code
	}()
	<-entered
	w := httptest.NewRecorder()
	rc.ServeHTTP(w, req())
	if w.Code != http.StatusConflict || w.Header().Get("Retry-After") == "" {
		t.Fatalf("concurrent duplicate: %d", w.Code)
	}
	close(release)
	if code := <-done; code != http.StatusOK {
		t.Fatalf("first: %d", code)
	}
	if s := rc.Stats(); s.InFlight != 1 || s.Accepted != 1 {
		t.Fatalf("Stats = %+v", s)
	}
}

func TestReceiverConfig(t *testing.T) {
	v := &Verifier{Secrets: []Secret{newSecret(t, 1)}}
	for _, c := range []ReceiverConfig{
		{},
		{Verifier: &Verifier{}},
		{Verifier: v, MaxBodyBytes: -1},
		{Verifier: v, DedupSize: -1},
		{Verifier: v, DedupTTL: -time.Second},
		// A handled id forgotten while its timestamp is within tolerance
		// could be replayed.
		{Verifier: v, DedupTTL: DefaultTolerance - time.Second},
		{Verifier: &Verifier{Secrets: v.Secrets, Tolerance: 2 * time.Hour}, DedupTTL: time.Hour},
	} {
		var ce *ConfigError
		if _, err := NewReceiver(c, http.NotFoundHandler()); !errors.As(err, &ce) {
			t.Errorf("NewReceiver(%+v) = %v, want a ConfigError", c, err)
		} else if c.DedupTTL > 0 && (ce.Field != "DedupTTL" || !strings.Contains(ce.Want, "Tolerance")) {
			t.Errorf("NewReceiver(%+v) = %v, want DedupTTL refused for the Tolerance", c, err)
		}
	}
	for _, c := range []struct {
		cfg  ReceiverConfig
		want time.Duration
	}{
		{ReceiverConfig{Verifier: v, DedupTTL: DefaultTolerance}, DefaultTolerance},
		{ReceiverConfig{Verifier: v}, DefaultDedupTTL},
		// Zero is the default or the Tolerance, whichever is longer.
		{ReceiverConfig{Verifier: &Verifier{Secrets: v.Secrets, Tolerance: 48 * time.Hour}}, 48 * time.Hour},
	} {
		rc, err := NewReceiver(c.cfg, http.NotFoundHandler())
		if err != nil {
			t.Errorf("NewReceiver(%+v) = %v", c.cfg, err)
		} else if rc.cfg.DedupTTL != c.want {
			t.Errorf("NewReceiver(%+v): DedupTTL %s, want %s", c.cfg, rc.cfg.DedupTTL, c.want)
		}
	}
}

// signed is a request signed at ts, kept to be sent again as is (a
// replay by whoever captured it).
type signed struct {
	h    http.Header
	body string
}

func (f *recvFixture) sign(id, body string, ts time.Time) signed {
	h := http.Header{}
	SetHeaders(h, id, ts, []byte(body), f.secret)
	return signed{h, body}
}

func (f *recvFixture) send(s signed) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(s.body))
	r.Header = s.h.Clone()
	w := httptest.NewRecorder()
	f.rc.ServeHTTP(w, r)
	return w
}

// TestReceiverFullRefusesRatherThanForget: with DedupSize handled ids
// whose timestamps are within tolerance, a new id gets 503 (Busy, with
// the seconds until one can go in Retry-After) rather than evict one,
// so a captured request replayed within tolerance is still a duplicate;
// once their timestamp + tolerance has passed (when the replay is
// refused as too old), new ids are accepted again.
func TestReceiverFullRefusesRatherThanForget(t *testing.T) {
	f := newRecvFixture(t, ReceiverConfig{DedupSize: 3})
	t0 := f.clock.Now()
	captured := f.sign("msg_0", `{"n":0}`, t0)
	if w := f.send(captured); w.Code != http.StatusNoContent {
		t.Fatalf("msg_0: %d", w.Code)
	}
	for _, id := range []string{"msg_1", "msg_2"} {
		if w := f.post(id, "{}", nil); w.Code != http.StatusNoContent {
			t.Fatalf("%s: %d", id, w.Code)
		}
	}
	f.clock.Add(time.Minute)
	for i := range 5 {
		w := f.post(fmt.Sprint("msg_new", i), "{}", nil)
		if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "within tolerance") {
			t.Fatalf("new id on a full cache of ids within tolerance: %d %q, want 503", w.Code, w.Body.String())
		}
		if ra := w.Header().Get("Retry-After"); ra != "241" {
			t.Errorf("Retry-After %q, want 241 (t0 + 5m is 4m away)", ra)
		}
	}
	// Up to the last instant the Verifier accepts its timestamp.
	for _, at := range []time.Time{t0.Add(time.Minute), t0.Add(DefaultTolerance)} {
		f.clock.Add(at.Sub(f.clock.Now()))
		if w := f.post("msg_new", "{}", nil); w.Code != http.StatusServiceUnavailable {
			t.Fatalf("new id at t0+%s: %d, want 503", at.Sub(t0), w.Code)
		}
		if w := f.send(captured); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "duplicate") {
			t.Fatalf("replay at t0+%s: %d %q, want a duplicate", at.Sub(t0), w.Code, w.Body.String())
		}
	}
	if len(f.got) != 3 {
		t.Fatalf("handed on %d times, want 3", len(f.got))
	}
	if s := f.rc.Stats(); s.Busy != 7 || s.Duplicates != 2 || s.Evicted != 0 || s.Remembered != 3 {
		t.Fatalf("Stats = %+v, want 7 busy, 2 duplicates, none evicted", s)
	}
	f.clock.Add(time.Second)
	if w := f.send(captured); w.Code != http.StatusUnauthorized {
		t.Fatalf("replay out of tolerance: %d, want 401", w.Code)
	}
	if w := f.post("msg_new", "{}", nil); w.Code != http.StatusNoContent {
		t.Fatalf("new id once the others are out of tolerance: %d %q", w.Code, w.Body.String())
	}
	if s := f.rc.Stats(); s.Evicted != 1 || s.Accepted != 4 || s.Remembered != 3 {
		t.Fatalf("Stats = %+v, want 1 evicted, 4 accepted", s)
	}
}

// TestReceiverStaleAtDedup: a request the Verifier accepted whose
// timestamp is out of tolerance by the Receiver's clock when it reaches
// the dedup cache is refused with 401 (else a replay could slip in just
// as its id is forgotten).
func TestReceiverStaleAtDedup(t *testing.T) {
	var f *recvFixture
	f = newRecvFixture(t, ReceiverConfig{Now: func() time.Time { return f.clock.Now().Add(time.Nanosecond) }})
	at := f.clock.Now().Add(-DefaultTolerance) // the oldest the Verifier accepts
	if w := f.send(f.sign("msg_1", "{}", at)); w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), ErrTimestampTooOld.Error()) {
		t.Fatalf("status %d %q, want 401 too old", w.Code, w.Body.String())
	}
	if s := f.rc.Stats(); len(f.got) != 0 || s.Unauthorized != 1 || s.Remembered != 0 {
		t.Fatalf("handed on %d, Stats = %+v", len(f.got), s)
	}
}

// failingReader fails the test's request if its body is read.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { panic("body read") }

// TestReceiverDedupFullKeepsInFlight: a full dedup cache evicts a
// handled id out of tolerance, never one being handled, so a retry of an
// id still in flight gets 409 and is not handed on a second time; when
// every remembered id is in flight, a new id gets 503 with Retry-After
// (counted in Busy) rather than pushing one out.
func TestReceiverDedupFullKeepsInFlight(t *testing.T) {
	secret := newSecret(t, 1)
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	release := make(chan struct{})
	entered := make(chan string, 8)
	rc, err := NewReceiver(ReceiverConfig{Verifier: &Verifier{Secrets: []Secret{secret}, Now: clock.Now}, DedupSize: 2},
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d, _ := DeliveryFrom(r)
			entered <- d.ID
			if strings.HasPrefix(d.ID, "msg_slow") {
				<-release
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	post := func(id string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader([]byte("{}")))
		SetHeaders(r.Header, id, clock.Now(), []byte("{}"), secret)
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, r)
		return w
	}
	done := make(chan int, 2)
	go func() { done <- post("msg_slow").Code }()
	if id := <-entered; id != "msg_slow" {
		t.Fatalf("handed on %s", id)
	}
	for _, id := range []string{"msg_a", "msg_b", "msg_c"} {
		// The id handled before is out of tolerance: it can go.
		clock.Add(DefaultTolerance + time.Second)
		if w := post(id); w.Code != http.StatusOK {
			t.Fatalf("%s: %d", id, w.Code)
		}
		<-entered
	}
	retry := make(chan int, 1)
	go func() { retry <- post("msg_slow").Code }()
	select {
	case id := <-entered:
		close(release)
		t.Fatalf("%s handed on again while its first request is still handled", id)
	case code := <-retry:
		if code != http.StatusConflict {
			t.Errorf("retry of msg_slow while it is handled: %d, want 409", code)
		}
	}
	clock.Add(DefaultTolerance + time.Second)
	go func() { done <- post("msg_slow2").Code }()
	if id := <-entered; id != "msg_slow2" {
		t.Fatalf("handed on %s", id)
	}
	// Both remembered ids are in flight: no room for a new one.
	if w := post("msg_d"); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Errorf("new id with every remembered id in flight: %d (Retry-After %q), want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	close(release)
	for range 2 {
		if code := <-done; code != http.StatusOK {
			t.Errorf("slow request: %d", code)
		}
	}
	select {
	case id := <-entered:
		t.Errorf("%s handed on once too often", id)
	default:
	}
	if s := rc.Stats(); s.Remembered != 2 || s.InFlight != 1 || s.Busy != 1 || s.Evicted != 3 || s.Accepted != 5 {
		t.Errorf("Stats = %+v, want 2 remembered, 1 in flight, 1 busy, 3 evicted, 5 accepted", s)
	}
}
