package multicast

import (
	"math"

	"github.com/brokerless/brokerless/transport/faultnet"
)

// urlFilter reads the loss, dup, reorder and seed parameters of an
// mcast:// URL: faults a faultnet.Filter injects on each subscriber's
// receive path, to rehearse a lossy network from a URL alone. It
// returns nil when none is asked for.
func urlFilter(p *params) func() (DatagramFilter, error) {
	f := faultnet.Faults{
		Loss:      p.float("loss"),
		Duplicate: p.float("dup"),
		Reorder:   p.float("reorder"),
		Seed:      int64(p.uintIn("seed", 0, math.MaxInt64)),
	}
	if f.Zero() {
		if p.q.Has("seed") {
			p.fail("seed", p.q.Get("seed"), "needs loss, dup or reorder")
		}
		return nil
	}
	return func() (DatagramFilter, error) { return faultnet.NewFilter(f) }
}
