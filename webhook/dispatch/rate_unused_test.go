package dispatch

import (
	"context"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// TestRateReachedInFlightBound: an endpoint limited to 4 a second gets
// 4 requests a second from a dispatcher whose MaxInFlightBytes holds
// only 2 of its payloads: the slots taken for the deliveries a claim
// got and admit refused (the bytes held) are given back, and the next
// claim takes them. Lost, it got 2 a second.
func TestRateReachedInFlightBound(t *testing.T) {
	s := sqliteStore(t)
	c := &clock{t: t0}
	d, rcv := boundedRateDispatcher(t, s, c)
	for i := range 4 {
		c.Set(t0.Add(time.Duration(i) * time.Second))
		if _, err := d.DeliverDue(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got, want := len(rcv.requests()), 4*(i+1); got != want {
			t.Fatalf("after %d s, %d requests to an endpoint limited to 4/s (1 s burst), 2 in flight at most; want %d", i, got, want)
		}
	}
}

// boundedRateDispatcher adds to s endpoint ep_1, limited to 4 a second,
// receiving at rcv (returned), and 20 events, and returns a dispatcher
// of s on c whose MaxInFlightBytes holds only 2 of their payloads.
func boundedRateDispatcher(t *testing.T, s store.Store, c *clock) (*Dispatcher, *receiver) {
	t.Helper()
	rcv := newReceiver(t, status(200))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	rateLimited(t, s, "ep_1", 4)
	var size int
	for range 20 {
		size = len(addEvent(t, s, "t", t0).Payload)
	}
	return newDispatcher(t, s, c, func(cfg *Config) { cfg.MaxInFlightBytes = 2 * size }), rcv
}
