package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook"
	"github.com/brokerless/brokerless/webhook/store"
)

// TestDeliverSigned: a stored event reaches its endpoint once, with the
// Standard Webhooks headers verifying against the endpoint's secret, and
// the attempt is recorded.
func TestDeliverSigned(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	rcv := newReceiver(t, status(204))
	sec := addEndpoint(t, s, "ep_1", rcv.URL, t0)
	ev := addEvent(t, s, "invoice.paid", t0)
	d := newDispatcher(t, s, c)
	deliverDue(t, d, 1)
	got := rcv.requests()
	if len(got) != 1 {
		t.Fatalf("%d requests", len(got))
	}
	v := &webhook.Verifier{Secrets: []webhook.Secret{sec}, Now: c.Now}
	if err := v.Verify(got[0].header, got[0].body); err != nil {
		t.Fatalf("signature: %v", err)
	}
	if id := got[0].header.Get("webhook-id"); id != ev.ID || !bytes.Equal(got[0].body, ev.Payload) {
		t.Fatalf("id %s body %s, want %s %s", id, got[0].body, ev.ID, ev.Payload)
	}
	var env struct {
		Type string
		Data json.RawMessage
	}
	if err := json.Unmarshal(got[0].body, &env); err != nil || env.Type != "invoice.paid" || string(env.Data) != `{"n":1}` {
		t.Fatalf("body %s: %v", got[0].body, err)
	}
	ds, _ := s.ListDeliveries(context.Background(), ev.ID)
	as, _ := s.ListAttempts(context.Background(), ev.ID)
	if ds[0].Status != store.StatusSucceeded || len(as) != 1 || as[0].StatusCode != 204 {
		t.Fatalf("delivery %+v attempts %+v", ds[0], as)
	}
	if st := d.Stats(); st.Attempts != 1 || st.Succeeded != 1 {
		t.Errorf("stats %+v", st)
	}
	deliverDue(t, d, 0)
}

// TestRetriesKeepID: failed attempts are retried on the schedule with
// the same webhook-id and a fresh timestamp and signature each time.
func TestRetriesKeepID(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	rcv := newReceiver(t, status(500), status(302), status(200))
	sec := addEndpoint(t, s, "ep_1", rcv.URL, t0)
	ev := addEvent(t, s, "t", t0)
	d := newDispatcher(t, s, c)
	deliverDue(t, d, 1)
	c.Set(t0.Add(5*time.Second - time.Millisecond))
	deliverDue(t, d, 0)
	c.Set(t0.Add(5 * time.Second))
	deliverDue(t, d, 1)
	c.Set(t0.Add(5*time.Second + 5*time.Minute))
	deliverDue(t, d, 1)
	got := rcv.requests()
	v := &webhook.Verifier{Secrets: []webhook.Secret{sec}, Tolerance: time.Hour, Now: c.Now}
	for i, r := range got {
		if r.header.Get("webhook-id") != ev.ID {
			t.Errorf("attempt %d: webhook-id %s, want %s", i, r.header.Get("webhook-id"), ev.ID)
		}
		if err := v.Verify(r.header, r.body); err != nil {
			t.Errorf("attempt %d: %v", i, err)
		}
		if i > 0 && (r.header.Get("webhook-timestamp") == got[i-1].header.Get("webhook-timestamp") ||
			r.header.Get("webhook-signature") == got[i-1].header.Get("webhook-signature")) {
			t.Errorf("attempt %d reuses the timestamp or signature of the one before", i)
		}
	}
	as, _ := s.ListAttempts(context.Background(), ev.ID)
	if len(as) != 3 || as[0].StatusCode != 500 || as[1].StatusCode != 302 || as[2].StatusCode != 200 || as[2].Outcome != store.StatusSucceeded {
		t.Fatalf("attempts %+v", as)
	}
}

// TestRetryAfter: a Retry-After longer than the schedule's delay holds
// the retry back.
func TestRetryAfter(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	rcv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
	}, status(200))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	addEvent(t, s, "t", t0)
	d := newDispatcher(t, s, c)
	deliverDue(t, d, 1)
	c.Set(t0.Add(119 * time.Second))
	deliverDue(t, d, 0)
	c.Set(t0.Add(120 * time.Second))
	deliverDue(t, d, 1)
}

// TestGoneDisables: 410 fails the delivery, disables the endpoint (no
// more attempts to it) and tells the notice endpoint.
func TestGoneDisables(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	gone := newReceiver(t, status(http.StatusGone))
	ops := newReceiver(t, status(200))
	addEndpoint(t, s, "ep_gone", gone.URL, t0)
	ev1 := addEvent(t, s, "t", t0)
	ev2 := addEvent(t, s, "t", t0)
	addEndpoint(t, s, "ep_ops", ops.URL, t0)
	d := newDispatcher(t, s, c, func(cfg *Config) { cfg.NoticeEndpoint = "ep_ops"; cfg.Concurrency = 1; cfg.BatchSize = 1 })
	deliverDue(t, d, 2) // the 410, then the notice
	e, _ := s.GetEndpoint(context.Background(), "ep_gone")
	if e.Enabled || !strings.Contains(e.DisabledReason, "410") {
		t.Fatalf("endpoint %+v", e)
	}
	// One delivery got the 410 and failed; the other, never attempted, is
	// paused until the endpoint is enabled again.
	d1, _ := s.ListDeliveries(context.Background(), ev1.ID)
	d2, _ := s.ListDeliveries(context.Background(), ev2.ID)
	statuses := []string{d1[0].Status, d2[0].Status}
	slices.Sort(statuses)
	if statuses[0] != store.StatusFailed || statuses[1] != store.StatusPaused || d1[0].Attempts+d2[0].Attempts != 1 {
		t.Fatalf("deliveries %+v %+v", d1[0], d2[0])
	}
	if n := len(gone.requests()); n != 1 {
		t.Fatalf("%d requests to the gone endpoint, want 1", n)
	}
	c.Set(t0.Add(time.Hour))
	deliverDue(t, d, 0)
	notices := ops.requests()
	if len(notices) != 1 || !bytes.Contains(notices[0].body, []byte(`"type":"endpoint.disabled"`)) || !bytes.Contains(notices[0].body, []byte(`"endpointId":"ep_gone"`)) {
		t.Fatalf("notices %q", notices)
	}
}

// TestCredentialsRedacted: an endpoint URL's userinfo (user name and
// password: a receiver protected by basic auth, or a token as the user
// name) is in neither the log line nor the endpoint.disabled notice of a
// 410, nor in the error kept with an attempt that could not connect.
func TestCredentialsRedacted(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	gone := newReceiver(t, status(http.StatusGone))
	ops := newReceiver(t, status(200))
	withUser := func(u, userinfo string) string { return strings.Replace(u, "http://", "http://"+userinfo+"@", 1) }
	addEndpoint(t, s, "ep_gone", withUser(gone.URL, "alice:pw-in-url"), t0)
	addEvent(t, s, "t", t0)
	addEndpoint(t, s, "ep_ops", ops.URL, t0)
	var logs bytes.Buffer
	var mu sync.Mutex
	d := newDispatcher(t, s, c, func(cfg *Config) {
		cfg.NoticeEndpoint = "ep_ops"
		cfg.Concurrency = 1
		cfg.BatchSize = 1
		cfg.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	})
	deliverDue(t, d, 2) // the 410, then the notice
	mu.Lock()
	log := logs.String()
	mu.Unlock()
	if !strings.Contains(log, "endpoint disabled") || strings.Contains(log, "pw-in-url") || strings.Contains(log, "alice") {
		t.Errorf("log %q: want the endpoint disabled, without its userinfo", log)
	}
	notices := ops.requests()
	if len(notices) != 1 || bytes.Contains(notices[0].body, []byte("pw-in-url")) || bytes.Contains(notices[0].body, []byte("alice")) ||
		!bytes.Contains(notices[0].body, []byte("xxxxx@127.0.0.1")) {
		t.Errorf("notices %q: want one, its url with userinfo xxxxx", notices)
	}
	// An attempt that cannot connect keeps net/http's error, which names
	// the URL (with the user name, net/http redacting only the password).
	gone.Close()
	addEndpoint(t, s, "ep_down", withUser(gone.URL, "tok-as-user"), t0)
	ev := addEvent(t, s, "t2", t0)
	deliverDue(t, d, 2) // to ep_down and ep_ops
	as, _ := s.ListAttempts(context.Background(), ev.ID)
	as = slices.DeleteFunc(as, func(a *store.Attempt) bool { return a.EndpointID != "ep_down" })
	if len(as) != 1 || as[0].Error == "" || strings.Contains(as[0].Error, "tok-as-user") || !strings.Contains(as[0].Error, "xxxxx@127.0.0.1") {
		t.Errorf("attempts %+v: want one failed, its error naming the URL without the user name", as)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestAutoDisable: an endpoint that fails for DisableAfter is disabled
// at the first failed attempt past it.
func TestAutoDisable(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	rcv := newReceiver(t, status(503))
	ops := newReceiver(t, status(200))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	addEvent(t, s, "t", t0)
	addEndpoint(t, s, "ep_ops", ops.URL, t0)
	d := newDispatcher(t, s, c, func(cfg *Config) { cfg.NoticeEndpoint = "ep_ops"; cfg.Policy.DisableAfter = time.Hour })
	at := t0
	for _, step := range []time.Duration{0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute} {
		at = at.Add(step)
		c.Set(at)
		deliverDue(t, d, 1)
		if e, _ := s.GetEndpoint(context.Background(), "ep_1"); !e.Enabled || !e.FailingSince.Equal(t0) {
			t.Fatalf("at %v: %+v", at.Sub(t0), e)
		}
	}
	c.Set(at.Add(2 * time.Hour)) // 2h35m5s after the first failure
	deliverDue(t, d, 2)          // the failure and the notice
	e, _ := s.GetEndpoint(context.Background(), "ep_1")
	if e.Enabled || !strings.Contains(e.DisabledReason, "failed since") {
		t.Fatalf("endpoint %+v", e)
	}
	if n := len(ops.requests()); n != 1 {
		t.Fatalf("%d notices", n)
	}
}

// TestExhausted: the last attempt of the schedule fails the delivery and
// sends a message.attempt.exhausted notice.
func TestExhausted(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	rcv := newReceiver(t, status(500))
	ops := newReceiver(t, status(200))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	ev := addEvent(t, s, "t", t0)
	addEndpoint(t, s, "ep_ops", ops.URL, t0)
	d := newDispatcher(t, s, c, func(cfg *Config) {
		cfg.NoticeEndpoint = "ep_ops"
		cfg.Policy.Schedule = []time.Duration{0, time.Second}
	})
	deliverDue(t, d, 1)
	c.Set(t0.Add(time.Second))
	deliverDue(t, d, 2)
	ds, _ := s.ListDeliveries(context.Background(), ev.ID)
	if ds[0].Status != store.StatusFailed || ds[0].Attempts != 2 {
		t.Fatalf("delivery %+v", ds[0])
	}
	n := ops.requests()
	if len(n) != 1 || !bytes.Contains(n[0].body, []byte(`"type":"message.attempt.exhausted"`)) || !bytes.Contains(n[0].body, []byte(ev.ID)) {
		t.Fatalf("notices %q", n)
	}
	if st := d.Stats(); st.Exhausted != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestRedirectNotFollowed: a 3xx is a failed attempt, and its Location
// is never requested.
func TestRedirectNotFollowed(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	target := newReceiver(t, status(200))
	rcv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	})
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	ev := addEvent(t, s, "t", t0)
	deliverDue(t, newDispatcher(t, s, c), 1)
	if n := len(target.requests()); n != 0 {
		t.Fatalf("the redirect was followed")
	}
	ds, _ := s.ListDeliveries(context.Background(), ev.ID)
	if ds[0].Status != store.StatusPending || ds[0].LastCode != 307 {
		t.Fatalf("delivery %+v", ds[0])
	}
}

// TestResponseCapped: an attempt keeps only MaxResponseBody bytes of the
// response.
func TestResponseCapped(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	rcv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(500)
		w.Write(bytes.Repeat([]byte("x"), 100<<10))
	})
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	ev := addEvent(t, s, "t", t0)
	deliverDue(t, newDispatcher(t, s, c, func(cfg *Config) { cfg.MaxResponseBody = 1000 }), 1)
	as, _ := s.ListAttempts(context.Background(), ev.ID)
	if len(as[0].Response) != 1000 {
		t.Fatalf("kept %d bytes of the response, want 1000", len(as[0].Response))
	}
}

// TestResponseHeadersCapped: an attempt whose response headers exceed
// webhook.MaxResponseHeaderBytes fails (the default Client reads no more).
func TestResponseHeadersCapped(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	rcv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("a", 2*webhook.MaxResponseHeaderBytes))
	})
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	ev := addEvent(t, s, "t", t0)
	deliverDue(t, newDispatcher(t, s, c), 1)
	as, _ := s.ListAttempts(context.Background(), ev.ID)
	if len(as) != 1 || as[0].StatusCode != 0 || as[0].Outcome == store.StatusSucceeded || !strings.Contains(as[0].Error, "header") {
		t.Errorf("attempts %+v, want one failed on its headers", as)
	}
}

// TestResponseKept: a short response body with its length given is kept
// whole with its attempt, and an empty one (204) is kept empty.
func TestResponseKept(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	rcv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "9")
		w.WriteHeader(503)
		w.Write([]byte("try later"))
	}, status(204))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	ev := addEvent(t, s, "t", t0)
	d := newDispatcher(t, s, c)
	deliverDue(t, d, 1)
	c.Set(t0.Add(time.Minute))
	deliverDue(t, d, 1)
	as, _ := s.ListAttempts(context.Background(), ev.ID)
	if len(as) != 2 || string(as[0].Response) != "try later" || as[0].StatusCode != 503 || len(as[1].Response) != 0 || as[1].StatusCode != 204 {
		t.Fatalf("attempts %+v, want the 503's body kept and the 204's empty", as)
	}
}

// TestTimeoutAndBlocked: an endpoint that does not answer in time, and
// one at an address the policy refuses, are failed attempts with an
// error and no status.
func TestTimeoutAndBlocked(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	release := make(chan struct{})
	hang := newReceiver(t, func(http.ResponseWriter, *http.Request) { <-release })
	defer close(release)
	addEndpoint(t, s, "ep_hang", hang.URL, t0)
	addEndpoint(t, s, "ep_blocked", "http://10.1.2.3:9/", t0)
	ev := addEvent(t, s, "t", t0)
	deliverDue(t, newDispatcher(t, s, c, func(cfg *Config) { cfg.Timeout = 100 * time.Millisecond }), 2)
	as, _ := s.ListAttempts(context.Background(), ev.ID)
	for _, a := range as {
		if a.StatusCode != 0 || a.Error == "" || a.Outcome != store.StatusPending {
			t.Errorf("attempt %+v", a)
		}
		if a.EndpointID == "ep_blocked" && !strings.Contains(a.Error, "not allowed") {
			t.Errorf("blocked attempt error %q", a.Error)
		}
	}
}

// TestTimeoutWithGivenClient: Timeout bounds an attempt made with a
// Client given in Config that has no Timeout of its own: an endpoint that
// never answers fails at Timeout, with the error kept.
func TestTimeoutWithGivenClient(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	release := make(chan struct{})
	hang := newReceiver(t, func(http.ResponseWriter, *http.Request) { <-release })
	defer close(release)
	addEndpoint(t, s, "ep_hang", hang.URL, t0)
	ev := addEvent(t, s, "t", t0)
	d := newDispatcher(t, s, c, func(cfg *Config) {
		cfg.Timeout = 100 * time.Millisecond
		cfg.Client = &http.Client{Transport: loopback.Transport(),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	if n, err := d.DeliverDue(ctx); n != 1 || err != nil || ctx.Err() != nil {
		t.Fatalf("DeliverDue: %d attempts, %v (after %v), want 1 ended by Timeout", n, err, time.Since(start))
	}
	as, _ := s.ListAttempts(context.Background(), ev.ID)
	if len(as) != 1 || !strings.Contains(as[0].Error, "deadline exceeded") {
		t.Errorf("attempts %+v, want one failed at the deadline", as)
	}
}

// TestRateLimit: an endpoint limited to 2 deliveries a second gets 2 at
// once, then 2 more a second later.
func TestRateLimit(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	rcv := newReceiver(t, status(200))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	e, _ := s.GetEndpoint(context.Background(), "ep_1")
	e.RateLimit = 2
	if err := s.UpdateEndpoint(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		addEvent(t, s, "t", t0)
	}
	d := newDispatcher(t, s, c)
	deliverDue(t, d, 2)
	c.Set(t0.Add(500 * time.Millisecond))
	deliverDue(t, d, 1)
	c.Set(t0.Add(1500 * time.Millisecond))
	deliverDue(t, d, 2)
}

// TestLeaseExpiry: deliveries leased by a dispatcher that died are
// delivered by another once the lease expires, with their original id.
func TestLeaseExpiry(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	rcv := newReceiver(t, status(200))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	ev := addEvent(t, s, "t", t0)
	jobs, err := s.Claim(context.Background(), store.ClaimRequest{Owner: "dead", Now: t0, Lease: time.Minute, Limit: 10})
	if err != nil || len(jobs) != 1 {
		t.Fatal(jobs, err)
	}
	d := newDispatcher(t, s, c)
	deliverDue(t, d, 0)
	c.Set(t0.Add(time.Minute))
	deliverDue(t, d, 1)
	if got := rcv.requests(); len(got) != 1 || got[0].header.Get("webhook-id") != ev.ID {
		t.Fatalf("requests %v", got)
	}
}

func TestConfigErrors(t *testing.T) {
	s := sqliteStore(t)
	for _, tc := range []struct {
		field string
		cfg   Config
	}{
		{"Store", Config{}},
		{"Lease", Config{Store: s, Timeout: time.Minute, Lease: time.Minute}},
		{"Policy.Jitter", Config{Store: s, Policy: Policy{Jitter: 1}}},
		{"Concurrency", Config{Store: s, Concurrency: -1}},
		{"MaxInFlight", Config{Store: s, Concurrency: 8, MaxInFlight: 4}},
		{"Policy.Schedule[1]", Config{Store: s, Policy: Policy{Schedule: []time.Duration{0, -1}}}},
	} {
		_, err := New(tc.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field || !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v", tc.field, err)
		}
	}
}

// TestQueueLeaseExpiry: deliveries that waited in their endpoint's queue
// until too little of their lease is left are released unattempted (a
// claim elsewhere may already be attempting them), and attempted later.
func TestQueueLeaseExpiry(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	const lease = time.Minute
	rcv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		c.Set(c.Now().Add(lease)) // the first attempt takes the whole lease
	}, status(200))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	for range 3 {
		addEvent(t, s, "t", t0)
	}
	d := newDispatcher(t, s, c, func(cfg *Config) { cfg.Concurrency, cfg.QueueDepth, cfg.Lease = 1, 1, lease })
	// The first claim takes 2 (Concurrency + QueueDepth); the first
	// attempt uses up the lease, so the second is released; the next
	// claim takes it and the third.
	deliverDue(t, d, 4)
	if n := len(rcv.requests()); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
	if st := d.Stats(); st.Expired != 1 || st.Attempts != 3 {
		t.Fatalf("stats %+v, want 1 expired", st)
	}
}

// TestSlowEndpointShortQueue: an endpoint whose attempts are slow gets a
// queue its workers get through in half the time a delivery may wait
// for its attempt (Lease − Timeout − 5 s), so its deliveries are
// attempted rather than released unattempted when their leases run
// short, and claimed again. Each attempt takes 5 s, Concurrency 1, a
// queue of up to 64 and a 60 s lease: a delivery may wait 40 s. The
// first claim takes all 30 (the pace is not known yet): 9 are attempted
// in the 40 s, 21 released. From then on the endpoint's queue is 20 s of
// attempts, 4, so none is released again (with a queue of 64 the next
// claims took all that were left, and 12 and then 3 more were released).
func TestSlowEndpointShortQueue(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	rcv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		c.Set(c.Now().Add(5 * time.Second))
		w.WriteHeader(http.StatusNoContent)
	})
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	for range 30 {
		addEvent(t, s, "t", t0)
	}
	d := newDispatcher(t, s, c, func(cfg *Config) { cfg.Concurrency, cfg.QueueDepth, cfg.Lease = 1, 64, time.Minute })
	if _, err := d.DeliverDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(rcv.requests()); n != 30 {
		t.Fatalf("%d requests, want 30", n)
	}
	if st := d.Stats(); st.Expired != 21 || st.Attempts != 30 || st.Succeeded != 30 {
		t.Fatalf("stats %+v, want 21 expired (all in the first claim) and 30 attempts", st)
	}
}

// TestRetryCountsFromAnswer: a retry's delay, and a Retry-After's, count
// from the failed attempt's end, when its answer came (or its timeout
// fired), not from its start: a first attempt that took 10 s (the
// timeout is 15 s) was retried at once, 5 s after it began.
func TestRetryCountsFromAnswer(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	rcv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		c.Set(c.Now().Add(10 * time.Second))
		w.WriteHeader(http.StatusServiceUnavailable)
	}, func(w http.ResponseWriter, _ *http.Request) {
		c.Set(c.Now().Add(10 * time.Second))
		w.Header().Set("Retry-After", "600")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	ev := addEvent(t, s, "t", t0)
	d := newDispatcher(t, s, c)
	deliverDue(t, d, 1)
	ds, _ := s.ListDeliveries(context.Background(), ev.ID)
	if want := t0.Add(15 * time.Second); !ds[0].NextAttempt.Equal(want) {
		t.Errorf("retry due %v after the attempt began, want %v (5 s after its answer)", ds[0].NextAttempt.Sub(t0), want.Sub(t0))
	}
	c.Set(ds[0].NextAttempt)
	deliverDue(t, d, 1)
	ds, _ = s.ListDeliveries(context.Background(), ev.ID)
	if want := t0.Add(625 * time.Second); !ds[0].NextAttempt.Equal(want) {
		t.Errorf("retry after Retry-After: 600 due at %v, want %v (600 s after the answer)", ds[0].NextAttempt.Sub(t0), want.Sub(t0))
	}
}
