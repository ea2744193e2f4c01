package main

import (
	"context"
	"sync"
	"time"

	"github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/transport/faultnet"
)

// demoProfile is one demo subscriber: its name and the faults injected
// on what it receives.
type demoProfile struct {
	name   string
	about  string
	faults faultnet.Faults
}

func demoProfiles(seed int64) []demoProfile {
	return []demoProfile{
		{"clean", "no loss", faultnet.Faults{}},
		{"loss-5%", "5% of datagrams dropped", faultnet.Faults{Seed: seed + 1, Loss: 0.05}},
		{"loss-20%", "20% dropped, 1% duplicated, 1% reordered",
			faultnet.Faults{Seed: seed + 2, Loss: 0.20, Duplicate: 0.01, Reorder: 0.01}},
	}
}

// demoSub receives on one subscriber from its own goroutine and keeps a
// tally that another goroutine can wait on.
type demoSub struct {
	profile demoProfile
	sub     *multicast.Subscriber

	mu      sync.Mutex
	t       tally
	changed chan struct{} // signalled after each event
	done    chan struct{} // closed when receive returns
	err     error         // why receive stopped, if not its ctx; read after done
}

func newDemoSub(p demoProfile, sub *multicast.Subscriber) *demoSub {
	return &demoSub{profile: p, sub: sub, t: newTally(), changed: make(chan struct{}, 1), done: make(chan struct{})}
}

// receive counts events until ctx ends or the subscriber fails.
func (d *demoSub) receive(ctx context.Context) {
	defer close(d.done)
	for {
		ev, err := d.sub.Receive(ctx)
		if err != nil {
			if ctx.Err() == nil {
				d.err = err
			}
			return
		}
		now := time.Now()
		d.mu.Lock()
		d.t.add(&ev, now)
		d.mu.Unlock()
		select {
		case d.changed <- struct{}{}:
		default:
		}
	}
}

// await waits until the subscriber has accounted for all published
// messages, its stream ended, it stopped, or ctx ended.
func (d *demoSub) await(ctx context.Context, published uint64) {
	for {
		d.mu.Lock()
		complete := d.t.complete(published)
		d.mu.Unlock()
		if complete {
			return
		}
		select {
		case <-d.changed:
		case <-d.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// result is the subscriber's outcome; call it after receive returned.
func (d *demoSub) result() subResult {
	return subResult{profile: d.profile, tally: d.t, stats: d.sub.Stats(), err: d.err}
}
