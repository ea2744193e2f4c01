package dispatch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// Dispatcher delivers due deliveries of a store.
type Dispatcher struct {
	cfg  Config
	wake chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex
	inFlight map[string]int // endpoint ID → attempts in flight
	total    int
	buckets  map[string]*bucket // endpoint ID → its rate limit

	stats struct {
		attempts, succeeded, failed, exhausted, disabled, leaseLost, storeErrors atomic.Int64
	}
}

// Stats counts what a Dispatcher did.
type Stats struct {
	// Attempts made, and of them those that succeeded and failed.
	Attempts, Succeeded, Failed int64
	// Exhausted deliveries and Disabled endpoints.
	Exhausted, Disabled int64
	// LeaseLost counts attempts whose result came after the lease
	// expired and another dispatcher claimed the delivery (their results
	// are not recorded; the other dispatcher's attempt is).
	LeaseLost int64
	// StoreErrors counts failed claims and completions.
	StoreErrors int64
}

// New returns a Dispatcher; Run starts it.
func New(cfg Config) (*Dispatcher, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Dispatcher{cfg: cfg, wake: make(chan struct{}, 1), inFlight: map[string]int{}, buckets: map[string]*bucket{}}, nil
}

// Stats returns the counters.
func (d *Dispatcher) Stats() Stats {
	s := &d.stats
	return Stats{Attempts: s.attempts.Load(), Succeeded: s.succeeded.Load(), Failed: s.failed.Load(), Exhausted: s.exhausted.Load(),
		Disabled: s.disabled.Load(), LeaseLost: s.leaseLost.Load(), StoreErrors: s.storeErrors.Load()}
}

// Notify tells the dispatcher that deliveries may be due now (an event
// was stored, an endpoint enabled), so it looks at once rather than at
// its next poll.
func (d *Dispatcher) Notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx is done, then waits for the attempts in flight,
// which are cancelled with ctx and whose deliveries are released
// unchanged for the next claim.
func (d *Dispatcher) Run(ctx context.Context) error {
	defer d.wg.Wait()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		started, full, wakeAt, err := d.poll(ctx)
		if ctx.Err() != nil {
			return nil
		}
		now := d.cfg.Now()
		wait := d.cfg.PollInterval
		switch {
		case err != nil:
			d.stats.storeErrors.Add(1)
			d.cfg.Logger.Warn("webhook dispatcher: claiming deliveries", "err", err)
		case started > 0 && full:
			// A full batch: there may be more due at once.
			wait = 0
		default:
			if next, ok, err := d.cfg.Store.NextDue(ctx); err == nil && ok {
				wait = min(wait, max(0, next.Sub(now)))
			}
			if !wakeAt.IsZero() {
				wait = min(wait, max(0, wakeAt.Sub(now)))
			}
		}
		if wait == 0 && started == 0 {
			// Work is due but nothing could start (every endpoint that has
			// some is full or rate limited): wait for a slot.
			wait = d.cfg.PollInterval
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-d.wake:
			if !timer.Stop() {
				<-timer.C
			}
		case <-timer.C:
		}
	}
}

// DeliverDue claims and attempts every delivery due at the clock's now,
// and waits for the attempts, repeating until nothing is due; it returns
// how many attempts it made. It is Run's work without its waiting, for
// tests that drive the clock.
func (d *Dispatcher) DeliverDue(ctx context.Context) (int, error) {
	total := 0
	for {
		started, _, _, err := d.poll(ctx)
		d.wg.Wait()
		total += started
		if err != nil || started == 0 {
			return total, err
		}
	}
}

// poll claims due deliveries of endpoints with a free slot and a rate
// token, and starts an attempt for each. It returns how many it started,
// whether the claim was a full batch, and when a rate-limited endpoint
// has a token again (zero if none is waiting).
func (d *Dispatcher) poll(ctx context.Context) (started int, full bool, wakeAt time.Time, err error) {
	now := d.cfg.Now()
	d.mu.Lock()
	room := d.cfg.MaxInFlight - d.total
	var skip []string
	for ep, n := range d.inFlight {
		if n >= d.cfg.Concurrency {
			skip = append(skip, ep)
		}
	}
	for ep, b := range d.buckets {
		if ok, at := b.ready(now); !ok {
			skip = append(skip, ep)
			if wakeAt.IsZero() || at.Before(wakeAt) {
				wakeAt = at
			}
		}
	}
	d.mu.Unlock()
	if room <= 0 {
		return 0, false, wakeAt, nil
	}
	limit := min(room, d.cfg.BatchSize)
	jobs, err := d.cfg.Store.Claim(ctx, store.ClaimRequest{Owner: d.cfg.Owner, Now: now, Lease: d.cfg.Lease,
		Limit: limit, PerEndpoint: d.cfg.Concurrency, Skip: skip})
	if err != nil {
		return 0, false, wakeAt, err
	}
	var release []string
	d.mu.Lock()
	for _, j := range jobs {
		ep := j.Endpoint.ID
		if !d.admit(ep, j.Endpoint.RateLimit, now) {
			release = append(release, j.Delivery.ID)
			continue
		}
		d.inFlight[ep]++
		d.total++
		d.wg.Add(1)
		started++
		go d.attempt(ctx, j)
	}
	d.mu.Unlock()
	if len(release) > 0 {
		if err := d.cfg.Store.Release(context.WithoutCancel(ctx), d.cfg.Owner, release); err != nil {
			d.stats.storeErrors.Add(1)
			d.cfg.Logger.Warn("webhook dispatcher: releasing deliveries", "err", err)
		}
	}
	return started, len(jobs) == limit, wakeAt, nil
}

// admit reports whether an attempt to ep may start now: a free slot
// and, for a rate-limited endpoint, a token (taken). d.mu is held.
func (d *Dispatcher) admit(ep string, rate int, now time.Time) bool {
	if d.inFlight[ep] >= d.cfg.Concurrency || d.total >= d.cfg.MaxInFlight {
		return false
	}
	if rate <= 0 {
		delete(d.buckets, ep)
		return true
	}
	b := d.buckets[ep]
	if b == nil || b.rate != rate {
		b = &bucket{rate: rate}
		d.buckets[ep] = b
	}
	return b.take(now)
}

// done frees the slot of an attempt to ep.
func (d *Dispatcher) done(ep string) {
	d.mu.Lock()
	if d.inFlight[ep]--; d.inFlight[ep] <= 0 {
		delete(d.inFlight, ep)
	}
	d.total--
	d.mu.Unlock()
	d.Notify()
	d.wg.Done()
}
