package dispatch

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
	"github.com/brokerless/brokerless/webhook/store/pgtest"
)

// TestGonePromptlyDisabled: an endpoint failing (FailingSince set)
// answers every dispatcher's first attempts 200, slowly, while each
// holds deliveries of it claimed ahead (its queue), and then every
// request 410 Gone, events coming in at a rate. The successes' health
// write raises the endpoint's revision under the attempts and claims
// made before it, and the first 410 that does not disable it raises it
// again (its health write starts a run of failures) under those made
// since: a 410 of an attempt at a revision gone does not disable it
// (Completion.DisableRevision). It must still be disabled within a few
// rounds of the workers' attempts (each dispatcher releases what it
// claimed before a disabling attempt is recorded, and claims again at
// the revision as it is now), not after its endpoints are read again
// (endpointRecheck), thousands of attempts later. Three dispatchers of
// 4 workers; on SQLite (one store) and PostgreSQL (one each).
func TestGonePromptlyDisabled(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		s := sqliteStore(t)
		testGonePromptlyDisabled(t, s, func() store.Store { return s })
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		cluster := pgtest.Start(t, "fsync=off")
		open := func() store.Store {
			s, err := store.Open(context.Background(), cluster.URL("postgres"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		testGonePromptlyDisabled(t, open(), open)
	})
}

func testGonePromptlyDisabled(t *testing.T, s store.Store, open func() store.Store) {
	const dispatchers, workers = 3, DefaultConcurrency
	var gone atomic.Int64
	oks := make(chan struct{}, dispatchers*workers)
	for range cap(oks) {
		oks <- struct{}{}
	}
	rcv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-oks:
			time.Sleep(50 * time.Millisecond)
			w.WriteHeader(http.StatusOK)
		default:
			time.Sleep(2 * time.Millisecond)
			gone.Add(1)
			w.WriteHeader(http.StatusGone)
		}
	})
	now := time.Now()
	addEndpoint(t, s, "ep_1", rcv.URL, now)
	e, _ := s.GetEndpoint(context.Background(), "ep_1")
	e.FailingSince = now.Add(-time.Hour)
	if err := s.UpdateEndpoint(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	for range 300 {
		addEvent(t, s, "t", now)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Add(1)
	go func() { // events at a rate
		defer wg.Done()
		for ctx.Err() == nil {
			if _, err := s.InsertEvent(ctx, NewEvent("t", []byte(`{}`), "", time.Now())); err != nil && ctx.Err() == nil {
				t.Error(err)
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	for i := range dispatchers {
		d, err := New(Config{Store: open(), Addresses: loopback, Owner: fmt.Sprintf("d%d", i), PollInterval: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); d.Run(ctx) }()
	}
	start := time.Now()
	for {
		got, err := s.GetEndpoint(context.Background(), "ep_1")
		if err != nil {
			t.Fatal(err)
		}
		if !got.Enabled {
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("endpoint still enabled after %v and %d answers 410 Gone", time.Since(start), gone.Load())
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("disabled after %v, %d answers 410 Gone", time.Since(start), gone.Load())
	// (Measured: 4 to 24; before DisableRevision, 4 to 12.)
	if n, most := gone.Load(), 4*dispatchers*workers; n > int64(most) {
		t.Errorf("endpoint disabled after %d answers 410 Gone (%d dispatchers of %d workers); want at most %d", n, dispatchers, workers, most)
	}
}
