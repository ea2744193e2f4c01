package dispatch

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// TestRateLimitNoBunching: an endpoint limited to rate a second, whose
// first attempts (Concurrency of them) hang for 5 s while its
// dispatchers poll every second, and then answer at once, gets no more
// requests in any second (by the clock, when they arrive) than its
// rate allows: rate at once and rate a second after (2 × rate − 1 in a
// second). With a slot taken as a claim queued a delivery, the
// deliveries queued behind the hanging attempts kept slots taken long
// ago and all went out together when they answered.
func TestRateLimitNoBunching(t *testing.T) {
	for _, dispatchers := range []int{1, 2} {
		t.Run(fmt.Sprint(dispatchers, " dispatchers"), func(t *testing.T) {
			const rate, concurrency, events = 2, 2, 40
			path := "sqlite:" + filepath.Join(t.TempDir(), "webhook.db")
			var stores []store.Store
			for range dispatchers {
				s, err := store.Open(context.Background(), path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				stores = append(stores, s)
			}
			c := &clock{t: t0}
			var (
				mu      sync.Mutex
				arrived []time.Time
			)
			started, answer := make(chan struct{}, events), make(chan struct{})
			rcv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				arrived = append(arrived, c.Now())
				first := len(arrived) <= concurrency
				mu.Unlock()
				if first {
					hold(started, answer)(w, r)
				}
			})
			addEndpoint(t, stores[0], "ep_1", rcv.URL, t0)
			rateLimited(t, stores[0], "ep_1", rate)
			for range events {
				addEvent(t, stores[0], "t", t0)
			}
			var ds []*Dispatcher
			for _, s := range stores {
				ds = append(ds, newDispatcher(t, s, c, func(cfg *Config) { cfg.Concurrency = concurrency }))
			}
			ctx := context.Background()
			// The first attempts hang while every dispatcher polls each second.
			for sec := range 6 {
				c.Set(t0.Add(time.Duration(sec) * time.Second))
				for i, d := range ds {
					if _, _, _, _, err := d.poll(ctx); err != nil {
						t.Fatal(err)
					}
					if i > 0 {
						// (The first holds the hanging attempts; the others'
						// finish before the clock moves on.)
						d.wg.Wait()
					}
				}
				if sec == 0 {
					for range concurrency {
						select {
						case <-started:
						case <-time.After(10 * time.Second):
							t.Fatal("the first attempts did not start")
						}
					}
				}
			}
			// They answer; the endpoint is fast from now on.
			close(answer)
			for step := range 8 {
				c.Set(t0.Add(5*time.Second + time.Duration(step)*500*time.Millisecond))
				for _, d := range ds {
					d.wg.Wait()
					if _, err := d.DeliverDue(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			times := append([]time.Time(nil), arrived...)
			sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
			for i, at := range times {
				n := 0
				for _, b := range times[i:] {
					if b.Sub(at) < time.Second {
						n++
					}
				}
				if n > 2*rate-1 {
					t.Fatalf("%d requests in the second from %v to an endpoint limited to %d/s (1 s burst: at most %d); arrivals %v",
						n, at.Sub(t0), rate, 2*rate-1, offsets(times))
				}
			}
			if len(times) < concurrency+2 {
				t.Fatalf("%d requests, want the hanging ones and more after", len(times))
			}
		})
	}
}

// offsets are times as durations since t0.
func offsets(ts []time.Time) []time.Duration {
	var o []time.Duration
	for _, t := range ts {
		o = append(o, t.Sub(t0))
	}
	return o
}

// countReleases counts the deliveries released.
type countReleases struct {
	store.Store
	mu       sync.Mutex
	released int
}

func (s *countReleases) Release(ctx context.Context, owner string, ids []string) error {
	s.mu.Lock()
	s.released += len(ids)
	s.mu.Unlock()
	return s.Store.Release(ctx, owner, ids)
}

// TestRateWaitNoClaimStorm: a dispatcher working through the backlog
// of an endpoint limited to 1 a second claims no more of it than its
// free workers each time a slot frees, rather than a batch to release
// all but the one it has a slot for.
func TestRateWaitNoClaimStorm(t *testing.T) {
	s, c := &countReleases{Store: sqliteStore(t)}, &clock{t: t0}
	rcv := newReceiver(t, status(200))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	rateLimited(t, s, "ep_1", 1)
	for range 50 {
		addEvent(t, s, "t", t0)
	}
	d := newDispatcher(t, s, c)
	for sec := range 10 {
		c.Set(t0.Add(time.Duration(sec) * time.Second))
		if _, err := d.DeliverDue(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	released := s.released
	s.mu.Unlock()
	// At most Concurrency − 1 released at each slot (the claim's
	// deliveries beyond the one slot).
	if n, most := len(rcv.requests()), 10*(DefaultConcurrency-1); n != 10 || released > most {
		t.Fatalf("%d requests, %d deliveries released in 10 s at 1/s; want 10, at most %d released", n, released, most)
	}
}
