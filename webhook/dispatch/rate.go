package dispatch

import (
	"context"
	"errors"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// takeSlots takes from the store, at now, a rate-limit slot for each
// delivery of jobs to a rate-limited endpoint, up to its free workers
// (Store.TakeRateSlots: one call per such endpoint, none for the
// others), and returns how many it took of each endpoint (admit queues
// as many). The slots are the endpoint's, shared by every dispatcher on
// the store, so its rate limit holds however many there are; a slot is
// taken as its attempt starts: a rate-limited endpoint has nothing
// queued behind its workers (endpointState.rate), so no delivery keeps
// a slot taken long ago, behind slow attempts, to go out with others
// once the endpoint answers quickly again. An
// endpoint given fewer than asked waits (endpointState.rateWait) until
// the next frees: claims skip it until then and its other deliveries
// are released, pending, for a later claim. A store error takes none:
// the deliveries are released, and the endpoint waits PollInterval.
// The slots admit then uses none of are given back (returnSlots).
func (d *Dispatcher) takeSlots(ctx context.Context, jobs []*store.Job, now time.Time) map[string]*slotsTaken {
	type want struct{ rate, n int }
	var wants map[string]*want
	d.mu.Lock()
	for _, j := range jobs {
		if j.Endpoint.RateLimit <= 0 || d.holding[j.Delivery.ID] != nil {
			// (One held already is renewed, not queued again.)
			continue
		}
		if wants == nil {
			wants = map[string]*want{}
		}
		w := wants[j.Endpoint.ID]
		if w == nil {
			w = &want{rate: j.Endpoint.RateLimit}
			wants[j.Endpoint.ID] = w
		}
		w.n++
	}
	for id, w := range wants {
		// Slots only for the free workers: each attempt starts as its
		// slot is taken (endpointState.rate).
		room := d.cfg.Concurrency
		if ep := d.endpoints[id]; ep != nil {
			room -= ep.held
		}
		w.n = max(0, min(w.n, room))
	}
	d.mu.Unlock()
	if wants == nil {
		return nil
	}
	slots := make(map[string]*slotsTaken, len(wants))
	for id, w := range wants {
		if w.n == 0 {
			continue
		}
		took, next, err := d.cfg.Store.TakeRateSlots(ctx, id, w.rate, w.n, now)
		switch {
		case errors.Is(err, store.ErrNotFound):
			// Deleted, its deliveries with it.
			continue
		case err != nil:
			if ctx.Err() == nil {
				d.stats.storeErrors.Add(1)
				d.cfg.Logger.Warn("webhook dispatcher: taking rate-limit slots", "endpoint", id, "err", err)
			}
			took, next = 0, now.Add(d.cfg.PollInterval)
		}
		slots[id] = &slotsTaken{rate: w.rate, n: took, took: took}
		if took < w.n {
			d.mu.Lock()
			d.endpoint(id).rateWait = next
			d.mu.Unlock()
		}
	}
	return slots
}

// slotsTaken is how many slots takeSlots took of an endpoint's rate
// limit (rate, took), and not yet used (n: admit uses them).
type slotsTaken struct{ rate, n, took int }

// aheadOf is how many of the last n of took slots, taken at at at rate,
// are still ahead of now, so that giving them back frees them and no
// more: the i-th slot a take gave ends i slots after the take's clock
// or later (rateSlots). One that ended is past: the endpoint's limit
// may have restarted from the clock since (a take by another dispatcher
// finding it idle), and moved back, the slots taken since would let
// more than the rate through.
func aheadOf(rate, n, took int, at, now time.Time) int {
	if rate <= 0 {
		return 0
	}
	past := int(min(int64(took), max(0, int64(now.Sub(at)))/rateSlot(rate)))
	return max(0, min(n, took-past))
}

// rateSlot is a slot of a rate limit of rate a second, as the store
// measures it (1/rate s rounded up).
func rateSlot(rate int) int64 {
	return (int64(time.Second) + int64(rate) - 1) / int64(rate)
}

// returnSlots gives back to the store, at now, the slots takeSlots took
// that admit used none of (slots, by endpoint: those left), for
// deliveries it refused (MaxInFlightBytes reached, the endpoint
// being disabled), and the endpoint waits for none: the next claim takes
// them. Kept, they were lost: an endpoint whose deliveries admit
// refused got less than its rate (half of it, with room for half its
// burst). A store error keeps them (the endpoint gets less, never
// more).
// (The jobs admitted are their workers' now: their endpoints are not
// read here.)
func (d *Dispatcher) returnSlots(ctx context.Context, slots map[string]*slotsTaken, now time.Time) {
	later := d.cfg.Now()
	for id, t := range slots {
		// Those still ahead of the clock only (aheadOf).
		d.giveBack(ctx, id, t.rate, aheadOf(t.rate, t.n, t.took, now, later), now)
	}
}

// returnSlot gives back the slot (its rate limit, claimed.slot; 0:
// none) a worker took no attempt with: the delivery admitted with it was
// released unattempted as it started, its endpoint being disabled. Kept,
// it was lost, as returnSlots's were. (An attempt that began keeps its
// slot, whether or not its request went out.)
func (d *Dispatcher) returnSlot(ctx context.Context, id string, rate int, takenAt time.Time) {
	// Taken at takenAt, it may be the first of its take: given back
	// only if still ahead of the clock then (aheadOf).
	d.giveBack(ctx, id, rate, aheadOf(rate, 1, 1, takenAt, d.cfg.Now()), d.cfg.Now())
}

// giveBack gives back n slots of endpoint id's rate limit rate, at now,
// and the endpoint waits for none (see returnSlots).
func (d *Dispatcher) giveBack(ctx context.Context, id string, rate, n int, now time.Time) {
	if rate <= 0 || n <= 0 {
		return
	}
	if err := d.cfg.Store.ReturnRateSlots(context.WithoutCancel(ctx), id, rate, n, now); err != nil {
		d.stats.storeErrors.Add(1)
		d.cfg.Logger.Warn("webhook dispatcher: returning rate-limit slots", "endpoint", id, "err", err)
		return
	}
	d.mu.Lock()
	if ep := d.endpoints[id]; ep != nil {
		ep.rateWait = time.Time{}
	}
	d.mu.Unlock()
}
