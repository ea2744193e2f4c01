package dispatch

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// slowRead is a store whose first GetEndpoint tells entered it began,
// then waits for proceed: a worker's read of its endpoint again
// (endpointRecheck) under way, for as long as a test needs.
type slowRead struct {
	store.Store
	once             sync.Once
	entered, proceed chan struct{}
}

func (s *slowRead) GetEndpoint(ctx context.Context, id string) (*store.Endpoint, error) {
	s.once.Do(func() {
		close(s.entered)
		<-s.proceed
	})
	return s.Store.GetEndpoint(ctx, id)
}

// TestUserDisableDuringRecheck: an endpoint with two workers, its user
// disabling it while both attempt a delivery; one worker then reads it
// again (endpointRecheck), and the other, its attempt done meanwhile,
// waits for what that read says: neither sends another delivery to the
// endpoint disabled. The other took the read under way as done (the
// last read's time set) and sent its next delivery.
func TestUserDisableDuringRecheck(t *testing.T) {
	base, c := sqliteStore(t), &clock{t: t0}
	s := &slowRead{Store: base, entered: make(chan struct{}), proceed: make(chan struct{})}
	started, answer := make(chan struct{}, 2), make(chan struct{})
	rcv := newReceiver(t, hold(started, answer), hold(started, answer), status(http.StatusOK))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	const events = 6
	for range events {
		addEvent(t, s, "t", t0)
	}
	d := newDispatcher(t, s, c, func(cfg *Config) { cfg.Concurrency = 2 })
	done := deliverDueInBackground(d)
	<-started
	<-started
	e, _ := base.GetEndpoint(context.Background(), "ep_1")
	e.Enabled, e.DisabledReason = false, "disabled through the API"
	if err := base.UpdateEndpoint(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	c.Set(t0.Add(2 * endpointRecheck))
	close(answer)
	<-s.entered
	// Both workers have taken their next delivery: one reads the
	// endpoint again, the other sent its delivery or waits for the read.
	for deadline := time.Now().Add(30 * time.Second); ; {
		d.mu.Lock()
		queued := len(d.endpoints["ep_1"].queue)
		d.mu.Unlock()
		if queued <= events-4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries queued after 30 s, want %d", queued, events-4)
		}
		time.Sleep(time.Millisecond)
	}
	close(s.proceed)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(rcv.requests()); n != 2 {
		t.Errorf("%d requests to the endpoint, %d after its user disabled it, one of its workers reading it again; want 2 (those under way)", n, n-2)
	}
}
