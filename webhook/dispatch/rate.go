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
		slots[id] = &slotsTaken{rate: w.rate, n: took, took: took, at: now}
		if took < w.n {
			d.mu.Lock()
			d.endpoint(id).rateWait = next
			d.mu.Unlock()
		}
	}
	return slots
}

// slotsTaken is how many slots takeSlots took of an endpoint's rate
// limit (rate, took) at at, not yet used (n: admit uses them), and
// given back since (returned, by returnSlots and returnSlot, under
// Dispatcher.mu).
type slotsTaken struct {
	rate, n, took, returned int
	at                      time.Time
}

// aheadOf is how many of the last n of took slots, taken at at at rate,
// are still ahead of now, so that giving them back frees them and no
// more: the i-th slot a take gave ends i slots after the take's clock
// or later (store.RateSlot). One that ended is past: the endpoint's limit
// may have restarted from the clock since (a take by another dispatcher
// finding it idle), and moved back, the slots taken since would let
// more than the rate through. A clock earlier than the take's (stepped
// back since) tells nothing of how long ago the take was: none is
// ahead. (Counted from it, every slot was ahead, and the store, which
// moves slots back to that clock at the earliest, gave them all back,
// past ones and the slots taken since with them.)
func aheadOf(rate, n, took int, at, now time.Time) int {
	if rate <= 0 || now.Before(at) {
		return 0
	}
	past := int(min(int64(took), int64(now.Sub(at))/int64(store.RateSlot(rate))))
	return max(0, min(n, took-past))
}

// returnSlots gives back to the store the slots takeSlots took
// that admit used none of (slots, by endpoint: those left), for
// deliveries it refused (MaxInFlightBytes reached, the endpoint
// being disabled), and the endpoint waits for none: the next claim takes
// them. Kept, they were lost: an endpoint whose deliveries admit
// refused got less than its rate (half of it, with room for half its
// burst). A store error keeps them (the endpoint gets less, never
// more). Only those still ahead of the clock (giveBack).
// (The jobs admitted are their workers' now: their endpoints are not
// read here.)
func (d *Dispatcher) returnSlots(ctx context.Context, slots map[string]*slotsTaken) {
	for id, t := range slots {
		d.giveBack(ctx, id, t, t.n)
	}
}

// returnSlot gives back the slot of t (nil: none) a worker took no
// attempt with: the delivery admitted with it was released unattempted
// as it started, its endpoint being disabled. Kept, it was lost, as
// returnSlots's were. (An attempt that began keeps its slot, whether or
// not its request went out.)
func (d *Dispatcher) returnSlot(ctx context.Context, id string, t *slotsTaken) {
	if t != nil {
		d.giveBack(ctx, id, t, 1)
	}
}

// giveBack gives back up to n slots of t, endpoint id's, at the clock,
// and the endpoint waits for none (see returnSlots): those still ahead
// of the clock (aheadOf), less those of t given back already. Each
// return counted its own as if none of the take had been given back: a
// worker's (returnSlot), then the claim's one slot later, gave back
// one past between them, moving back the slots another dispatcher had
// taken meanwhile.
func (d *Dispatcher) giveBack(ctx context.Context, id string, t *slotsTaken, n int) {
	d.mu.Lock()
	now := d.cfg.Now()
	n = aheadOf(t.rate, n, t.took-t.returned, t.at, now)
	t.returned += n
	d.mu.Unlock()
	if n <= 0 {
		return
	}
	// (One the store failed to take back is counted given back all the
	// same: the endpoint gets less, never more.)
	if err := d.cfg.Store.ReturnRateSlots(context.WithoutCancel(ctx), id, t.rate, n, now); err != nil {
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
