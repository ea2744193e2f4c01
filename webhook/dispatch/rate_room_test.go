package dispatch

import (
	"context"
	"sync"
	"testing"

	"github.com/brokerless/brokerless/webhook/store"
)

// lastClaim is a store that keeps what its last claim returned.
type lastClaim struct {
	store.Store
	mu   sync.Mutex
	jobs []*store.Job
}

func (s *lastClaim) Claim(ctx context.Context, r store.ClaimRequest) ([]*store.Job, error) {
	jobs, err := s.Store.Claim(ctx, r)
	s.mu.Lock()
	s.jobs = jobs
	s.mu.Unlock()
	return jobs, err
}

// byEndpoint counts the last claim's jobs by endpoint.
func (s *lastClaim) byEndpoint() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := map[string]int{}
	for _, j := range s.jobs {
		n[j.Delivery.EndpointID]++
	}
	return n
}

// TestRateRoomPerEndpoint: a claim takes of each rate-limited endpoint
// as many deliveries as its own workers are free: one with 3 of its 4
// workers busy gets 1 more, another, idle, all 4 of its backlog in the
// same claim. With one cap for every rate-limited endpoint (the least
// room of them) the idle one got 1.
func TestRateRoomPerEndpoint(t *testing.T) {
	ctx := context.Background()
	s := &lastClaim{Store: sqliteStore(t)}
	c := &clock{t: t0}
	started, answer := make(chan struct{}, 8), make(chan struct{})
	busy, idle := newReceiver(t, hold(started, answer)), newReceiver(t, status(200))
	for _, e := range []struct{ id, url, typ string }{{"ep_busy", busy.URL, "busy"}, {"ep_idle", idle.URL, "idle"}} {
		err := s.CreateEndpoint(ctx, &store.Endpoint{ID: e.id, URL: e.url, EventTypes: []string{e.typ}, RateLimit: 100, Enabled: true,
			Secrets: []store.Secret{{Secret: newSecret(t).String()}}, Created: t0, Updated: t0})
		if err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		addEvent(t, s, "busy", t0)
	}
	d := newDispatcher(t, s, c, func(cfg *Config) { cfg.Concurrency = 4 })
	defer d.wg.Wait()
	defer close(answer)
	if n, _, _, _, err := d.poll(ctx); err != nil || n != 3 {
		t.Fatalf("first claim: %d (%v), want ep_busy's 3", n, err)
	}
	for range 3 {
		<-started
	}
	for range 4 {
		addEvent(t, s, "idle", t0)
		addEvent(t, s, "busy", t0)
	}
	if _, _, _, _, err := d.poll(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.byEndpoint(); got["ep_idle"] != 4 || got["ep_busy"] != 1 {
		t.Fatalf("a claim with ep_busy's 3 of 4 workers busy took %d of idle ep_idle's 4 and %d of ep_busy's 4; want 4 and 1", got["ep_idle"], got["ep_busy"])
	}
}
