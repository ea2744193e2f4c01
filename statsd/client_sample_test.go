package statsd

import (
	"math"
	"testing"
)

// Client-side sampling keeps the asked fraction of events: 100,000 calls
// at rate 0.25 keep 25,000 give or take 5 standard deviations (685).
func TestClientSamplingRate(t *testing.T) {
	srv := clientUDP(t)
	c := newTestClient(t, ClientConfig{Addr: srv.LocalAddr().String()})
	const calls, rate = 100_000, 0.25
	for range calls {
		c.Count("sampled", 1, rate)
	}
	c.Close()
	st := c.Stats()
	kept := float64(st.Lines + st.Dropped)
	if sd := math.Sqrt(calls * rate * (1 - rate)); math.Abs(kept-calls*rate) > 5*sd {
		t.Fatalf("kept %.0f of %d events at rate %v, want %.0f ± %.0f", kept, calls, rate, calls*rate, 5*sd)
	}
}
