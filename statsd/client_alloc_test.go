package statsd

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Metric calls allocate nothing, whether their lines are written or
// dropped; the count covers the sender goroutine too.
func TestClientZeroAllocs(t *testing.T) {
	if testing.CoverMode() != "" || clientRaceEnabled {
		t.Skip("allocation counts are not meaningful under -cover or -race")
	}
	srv := clientUDP(t) // bound, never read: the kernel drops what overflows it
	c := newTestClient(t, ClientConfig{Addr: srv.LocalAddr().String(), Tags: []string{"env:test"}, Sequence: true})
	cases := []struct {
		name string
		call func()
	}{
		{"Incr", func() { c.Incr("requests") }},
		{"Incr tags", func() { c.Incr("requests", "route:/api", "code:200") }},
		{"Count sampled", func() { c.Count("requests", 3, 0.5, "route:/api") }},
		{"Timing", func() { c.Timing("latency", 1234567*time.Nanosecond) }},
		{"Timing tags", func() { c.Timing("latency", 1234567*time.Nanosecond, "route:/api", "code:200") }},
		{"Sampled Timing", func() { c.Sampled(0.1).Timing("latency", time.Millisecond, "route:/api") }},
		{"Gauge", func() { c.Gauge("queue", 17.25) }},
		{"Gauge tags", func() { c.Gauge("queue", -3, "q:in") }},
		{"GaugeDelta", func() { c.GaugeDelta("queue", 2) }},
		{"Histogram", func() { c.Histogram("size", 512, "k:v") }},
		{"Distribution", func() { c.Distribution("size", 0.5) }},
		{"Set", func() { c.Set("users", "alice", "k:v") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for range 10_000 { // warm up: the queue fills and drains
				tc.call()
			}
			if allocs := testing.AllocsPerRun(20_000, tc.call); allocs != 0 {
				t.Fatalf("%.3f allocations per call", allocs)
			}
		})
	}
}

func TestClientNoGoroutineLeak(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := clientUDP(t)
	c := newTestClient(t, ClientConfig{Addr: srv.LocalAddr().String(), FlushInterval: time.Millisecond})
	c.Incr("x")
	c.Close()
}
