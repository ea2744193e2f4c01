package main

import (
	"context"
	"time"

	"github.com/brokerless/brokerless/transport"
)

const (
	// minPause is the shortest wait between two bursts of ticks: shorter
	// sleeps cost more in wake-ups than they gain in smoothness.
	minPause = 500 * time.Microsecond
	// maxBurst bounds the ticks published between two checks of ctx
	// while catching up.
	maxBurst = 4096
)

// publishTicks publishes ticks from gen on the schedule p until the
// schedule is complete or ctx ends, and returns how many it published.
// Message times are left for the transport to set at Publish.
func publishTicks(ctx context.Context, pub transport.Publisher, gen *tickGen, p pacer) (uint64, error) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var sent uint64
	for {
		for target := min(p.due(time.Now()), sent+maxBurst); sent < target; sent++ {
			topic, payload := gen.next()
			if err := pub.Publish(ctx, transport.Message{Topic: topic, Payload: payload}); err != nil {
				return sent, &publisherError{err}
			}
		}
		if p.done(sent) {
			return sent, nil
		}
		wait := time.Until(p.at(sent))
		if wait <= 0 {
			if err := ctx.Err(); err != nil {
				return sent, err
			}
			continue
		}
		timer.Reset(max(wait, minPause))
		select {
		case <-ctx.Done():
			return sent, ctx.Err()
		case <-timer.C:
		}
	}
}
