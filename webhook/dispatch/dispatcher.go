package dispatch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// Dispatcher delivers due deliveries of a store.
type Dispatcher struct {
	cfg     Config
	wake    chan struct{}
	wg      sync.WaitGroup
	commits committer

	mu        sync.Mutex
	endpoints map[string]*endpointState
	held      int // deliveries claimed and not finished, in all
	heldBytes int // their payloads' bytes
	// payload is the size of the payloads claimed (a moving average),
	// which sizes a claim to the bytes left (MaxInFlightBytes).
	payload int
	// polls counts the polls (claims) made; see endpointState.staleUpTo.
	polls uint64
	// holding is every delivery queued or being attempted, by id: a
	// claim that takes one again (its lease expired by the wall clock,
	// which stepped forward) renews its lease rather than queue it twice.
	holding map[string]*claimed

	stats struct {
		attempts, succeeded, failed, exhausted, disabled, leaseLost, expired, storeErrors, purged atomic.Int64
	}
}

// endpointState is what a dispatcher holds for one endpoint: its queue
// of claimed deliveries, its workers and when its rate limit has a slot.
type endpointState struct {
	queue   []*claimed
	held    int // queued or being attempted
	running int // workers, at most Concurrency
	// rate is its rate limit as its last claim had it (0: none). A
	// rate-limited endpoint has nothing queued ahead of its workers
	// (depth 0): its deliveries are claimed as workers free up, and
	// each starts with a slot taken as it was claimed, not one taken
	// long before, behind slow attempts.
	rate int
	// rateWait is when the store said the endpoint's rate limit has a
	// slot free again (takeSlots), the slots of every dispatcher on the
	// store taken: claims skip it until then. Zero (or past): none known.
	rateWait time.Time
	// wanting is set when a worker asked for a claim (its queue down to
	// the refill mark) and cleared by the next claim that includes the
	// endpoint: one wake-up per refill, not one per attempt.
	wanting bool
	// pace is how long its attempts take (a moving average; zero before
	// the first), which bounds its queue (Dispatcher.depth).
	pace time.Duration
	// checked is when a worker last read the endpoint again
	// (endpointRecheck), and latest what it read: the deliveries claimed
	// with an older revision of it are attempted to it as it is now.
	checked time.Time
	latest  *store.Endpoint
	// reading is closed when the read again under way ends (nil: none):
	// the other workers' deliveries claimed as long ago wait for what it
	// says (attempted meanwhile, one went out to an endpoint its user had
	// disabled, the last read's time set already).
	reading chan struct{}
	// disabling counts this dispatcher's attempts that disable the
	// endpoint (410 Gone, failing too long) and are not recorded yet, and
	// staleUpTo is the last poll (Dispatcher.polls) that may have claimed
	// deliveries of it before the last of those was recorded. While one
	// is under way, and for the deliveries claimed before, those are
	// released, not attempted: the disable pauses them with the
	// endpoint's other pending deliveries, to be delivered once it is
	// enabled again (attempted, each would have failed for good on its
	// own 410). A claim after the disable was recorded takes deliveries
	// of the endpoint only once it is enabled again.
	disabling int
	staleUpTo uint64
}

// stale reports whether a delivery of ep claimed by poll number seq is
// to be released rather than attempted (see endpointState.disabling).
func (ep *endpointState) stale(seq uint64) bool {
	return ep.disabling > 0 || seq <= ep.staleUpTo
}

// claimed is a leased delivery, the poll that claimed it (seq), when the lease was taken (by Now) and
// its end as the store has it (Job.LeaseUntil: on PostgreSQL by the
// server's clock, so the lease ends at at + Lease by Now), and when the
// claim returned (got, by Now), all set again, under Dispatcher.mu,
// when a claim renews it. The lease began (by the store's clock) no
// later than got: an attempt started at start by Now started at
// until − Lease + (start − got) or later by the store's clock
// (Completion.LeaseStarted).
//
// slots is the take of rate-limit slots it has one of (nil: none), its
// slot given back if it is released unattempted as it starts, its
// endpoint being disabled (returnSlot).
type claimed struct {
	job   *store.Job
	seq   uint64
	at    time.Time
	until time.Time
	got   time.Time
	slots *slotsTaken
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
	// Expired counts deliveries released unattempted because they waited
	// in their endpoint's queue until too little of their lease was left.
	Expired int64
	// StoreErrors counts failed claims, completions, purges and reads
	// of an endpoint (endpointRecheck).
	StoreErrors int64
	// Purged counts events deleted for being older than Retention.
	Purged int64
}

// New returns a Dispatcher; Run starts it.
func New(cfg Config) (*Dispatcher, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d := &Dispatcher{cfg: cfg, wake: make(chan struct{}, 1), endpoints: map[string]*endpointState{}, holding: map[string]*claimed{}}
	d.commits.init(d)
	return d, nil
}

// Stats returns the counters.
func (d *Dispatcher) Stats() Stats {
	s := &d.stats
	return Stats{Attempts: s.attempts.Load(), Succeeded: s.succeeded.Load(), Failed: s.failed.Load(), Exhausted: s.exhausted.Load(),
		Disabled: s.disabled.Load(), LeaseLost: s.leaseLost.Load(), Expired: s.expired.Load(), StoreErrors: s.storeErrors.Load(),
		Purged: s.purged.Load()}
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

// Run delivers until ctx is done, and deletes the events older than
// Retention as it starts and every hour. Then it waits for the attempts
// in flight, which are cancelled with ctx: those that had no answer yet
// leave their deliveries released unchanged for the next claim; those
// answered are recorded.
func (d *Dispatcher) Run(ctx context.Context) error {
	defer d.wg.Wait()
	if d.cfg.Retention > 0 {
		d.wg.Add(1)
		go d.purgeEvery(ctx)
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		started, full, wakeAt, working, err := d.poll(ctx)
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
		case started == 0:
			// Nothing to do now: sleep until the next delivery is due
			// (attempts that finish wake the loop, and the endpoints
			// working through a backlog, left out, do when their queues
			// run low; those waiting for a rate-limit slot, left out too,
			// at wakeAt).
			if next, ok, err := d.cfg.Store.NextDue(ctx, working...); err == nil && ok {
				wait = min(wait, max(0, next.Sub(now)))
			}
			if !wakeAt.IsZero() {
				wait = min(wait, max(0, wakeAt.Sub(now)))
			}
		default:
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
			timer.Stop() // (Go 1.23 timers: no stale tick after Stop)
		case <-timer.C:
		}
	}
}

// DeliverDue claims and attempts every delivery due at the clock's now,
// and waits for the attempts, repeating until nothing is due; it returns
// how many deliveries it claimed (each attempted, unless released for
// lack of lease, see Config.Lease). It is Run's work without its
// waiting, for tests that drive the clock.
func (d *Dispatcher) DeliverDue(ctx context.Context) (int, error) {
	total := 0
	for {
		started, _, _, _, err := d.poll(ctx)
		d.wg.Wait()
		total += started
		if err != nil || started == 0 {
			return total, err
		}
	}
}

// poll claims due deliveries of endpoints with room in their queue and,
// when rate limited, not waiting for a slot, and queues those it takes
// a slot for, starting workers as slots allow. It returns how many it
// queued, whether the claim was a full batch, when a rate-limited
// endpoint has a slot again (zero if none waits), and the endpoints it
// skipped whose due deliveries need not wake it: those holding more than
// their refill mark, and those waiting for a slot (wakeAt).
func (d *Dispatcher) poll(ctx context.Context) (queued int, full bool, wakeAt time.Time, working []string, err error) {
	now := d.cfg.Now()
	// An endpoint holds at most Concurrency + its depth deliveries, and
	// is refilled once its queue is down to half, so that its workers
	// find the next deliveries queued while the claim runs rather than
	// wait for it. A claim skips the endpoints holding more (a hanging
	// one does until its attempts time out, so its backlog is not even
	// read) and asks for as many of each as the one with the least room
	// takes (all of it for an endpoint this dispatcher holds nothing of).
	perEndpoint := d.cfg.Concurrency + d.cfg.QueueDepth
	d.mu.Lock()
	d.polls++
	seq := d.polls
	room := d.cfg.MaxInFlight - d.held
	if d.held > 0 && d.payload > 0 {
		// As many as take the payloads held to MaxInFlightBytes, at the
		// size of those seen (none once they hold it).
		room = min(room, (d.cfg.MaxInFlightBytes-d.heldBytes+d.payload-1)/d.payload)
	}
	// A rate-limited endpoint is claimed no more than its free workers
	// (the store caps it: ClaimRequest.RateRoom, each its own, named for
	// every endpoint holding some, which the store applies to those
	// with a rate limit now, and RateLimited, all free, for the others).
	// One cap for all held every rate-limited endpoint in the claim to
	// the least room of them.
	var (
		skip     []string
		asked    []*endpointState
		rateRoom map[string]int
	)
	for id, ep := range d.endpoints {
		if d.idle(ep) && !now.Before(ep.rateWait) {
			// Forgotten as an endpoint without a rate limit is when its
			// worker ends (work), now that it waits for no slot (the
			// slots are the store's) or its disable is recorded.
			delete(d.endpoints, id)
			continue
		}
		if ep.disabling > 0 {
			// Being disabled: what a claim took would be released.
			skip = append(skip, id)
			continue
		}
		if ep.held > d.refillBelow(ep) {
			skip = append(skip, id)
			working = append(working, id)
			continue
		}
		if now.Before(ep.rateWait) {
			skip = append(skip, id)
			working = append(working, id)
			if wakeAt.IsZero() || ep.rateWait.Before(wakeAt) {
				wakeAt = ep.rateWait
			}
			continue
		}
		asked = append(asked, ep)
		if ep.rate > 0 || ep.held > 0 {
			if rateRoom == nil {
				rateRoom = map[string]int{}
			}
			rateRoom[id] = max(1, d.cfg.Concurrency-ep.held)
		}
		if ep.rate <= 0 && ep.held > 0 {
			// (An idle endpoint takes what its depth allows of the claim
			// and releases the rest, rather than shrink every endpoint's.)
			perEndpoint = min(perEndpoint, d.cfg.Concurrency+d.depth(ep)-ep.held)
		}
	}
	d.mu.Unlock()
	if room <= 0 {
		return 0, false, wakeAt, working, nil
	}
	limit := min(room, d.cfg.BatchSize)
	jobs, err := d.cfg.Store.Claim(ctx, store.ClaimRequest{Owner: d.cfg.Owner, Now: now, Lease: d.cfg.Lease,
		Limit: limit, PerEndpoint: perEndpoint, RateLimited: d.cfg.Concurrency, RateRoom: rateRoom, Skip: skip})
	if err != nil {
		return 0, false, wakeAt, working, err
	}
	got := d.cfg.Now()
	slots := d.takeSlots(ctx, jobs, got)
	var release []string
	d.mu.Lock()
	for _, ep := range asked {
		ep.wanting = false
	}
	for _, j := range jobs {
		if size := len(j.Event.Payload); d.payload == 0 {
			d.payload = max(size, 1)
		} else {
			d.payload = max((7*d.payload+size)/8, 1)
		}
		if c := d.holding[j.Delivery.ID]; c != nil {
			// Held already, queued or being attempted: the claim took it
			// again because its lease had expired by the clock. The lease
			// is renewed; the attempt under way or to come records under it.
			c.at, c.until, c.got = now, j.LeaseUntil, got
			continue
		}
		if !d.admit(ctx, j, seq, now, got, slots) {
			release = append(release, j.Delivery.ID)
			continue
		}
		queued++
	}
	d.mu.Unlock()
	d.returnSlots(ctx, slots)
	d.release(ctx, release)
	return queued, len(jobs) == limit, wakeAt, working, nil
}

// maxPaced is how many idle endpoints a dispatcher remembers the slow
// pace of (Dispatcher.depth).
const maxPaced = 1024

// endpointRecheck is how old a claim of an endpoint's deliveries may be
// before a worker reads the endpoint again, ahead of its next attempt,
// to see whether its user disabled, deleted or changed it meanwhile
// (through the API or the console, which write the store, not the
// dispatcher): once it sees it disabled, its deliveries held are
// released, not attempted (endpointState.staleUpTo), so an endpoint gets
// at most about this long of attempts after its user disabled it, and
// changed (a new URL, a rotated secret), they are attempted to it as it
// is now (endpointState.latest). (Once a second per endpoint
// with a backlog under way: the claims of one that is quick are fresh.)
const endpointRecheck = time.Second

// idle reports whether ep holds no delivery and runs no worker, and its
// state says nothing worth remembering but a rate limit: its pace does
// not shorten its queue, or maxPaced endpoints are remembered already.
// d.mu is held.
func (d *Dispatcher) idle(ep *endpointState) bool {
	return ep.running == 0 && ep.held == 0 && ep.disabling == 0 && (ep.rate > 0 || d.depth(ep) == d.cfg.QueueDepth || len(d.endpoints) > maxPaced)
}

// refillBelow is the most deliveries ep holds (queued or being
// attempted) and still gets refilled: Concurrency and half its queue.
func (d *Dispatcher) refillBelow(ep *endpointState) int {
	depth := d.depth(ep)
	return d.cfg.Concurrency + depth - max(1, depth/2)
}

// depth is how many deliveries of ep are claimed ahead of its workers:
// QueueDepth, or fewer for an endpoint whose attempts are slow: no more
// than its workers get through, at its pace, in half the part of a lease
// a delivery may wait (Lease − Timeout − 5 s), so that a slow endpoint's
// queue is attempted before its leases run short rather than released
// unattempted and claimed again. A deep queue is for fast endpoints: a
// claim's cost is mostly per claim, not per delivery, and the workers
// must not run out while the next claim runs. A rate-limited endpoint
// has none (endpointState.rate).
func (d *Dispatcher) depth(ep *endpointState) int {
	if ep.rate > 0 {
		return 0
	}
	if ep.pace <= 0 {
		return d.cfg.QueueDepth
	}
	wait := (d.cfg.Lease - d.cfg.Timeout - leaseMargin) / 2
	n := int64(d.cfg.Concurrency) * int64(wait/ep.pace)
	return max(min(1, d.cfg.QueueDepth), int(min(n, int64(d.cfg.QueueDepth))))
}

// paced adds an attempt that took took to ep's pace (a moving average of
// the last few). d.mu is held.
func (ep *endpointState) paced(took time.Duration) {
	if ep.pace <= 0 {
		ep.pace = max(took, 1)
		return
	}
	ep.pace = max((7*ep.pace+took)/8, 1)
}

// endpoint returns what d holds for endpoint id, made if it holds
// nothing yet. d.mu is held.
func (d *Dispatcher) endpoint(id string) *endpointState {
	ep := d.endpoints[id]
	if ep == nil {
		ep = &endpointState{}
		d.endpoints[id] = ep
	}
	return ep
}

// admit queues j if its endpoint has room and, when rate limited, one
// of the slots takeSlots took for it left (slots, by endpoint: taken),
// and starts a worker if a slot is free (a rate-limited endpoint has
// room only for its free workers: its attempt starts at once, with the
// slot just taken). d.mu is held.
func (d *Dispatcher) admit(ctx context.Context, j *store.Job, seq uint64, now, got time.Time, slots map[string]*slotsTaken) bool {
	id := j.Endpoint.ID
	ep := d.endpoint(id)
	ep.rate = j.Endpoint.RateLimit
	if ep.held >= d.cfg.Concurrency+d.depth(ep) || d.held >= d.cfg.MaxInFlight || d.heldBytes >= d.cfg.MaxInFlightBytes || ep.stale(seq) {
		return false
	}
	var t *slotsTaken
	if j.Endpoint.RateLimit > 0 {
		if t = slots[id]; t == nil || t.n <= 0 {
			return false
		}
		t.n--
	}
	c := &claimed{job: j, seq: seq, at: now, until: j.LeaseUntil, got: got, slots: t}
	ep.queue = append(ep.queue, c)
	d.holding[j.Delivery.ID] = c
	ep.held++
	d.held++
	d.heldBytes += len(j.Event.Payload)
	if ep.running < d.cfg.Concurrency {
		ep.running++
		d.wg.Add(1)
		go d.work(ctx, id)
	}
	return true
}

// work attempts the deliveries queued for endpoint id, one at a time,
// until its queue is empty.
func (d *Dispatcher) work(ctx context.Context, id string) {
	defer d.wg.Done()
	for {
		d.mu.Lock()
		ep := d.endpoints[id]
		if len(ep.queue) == 0 {
			ep.running--
			// An idle endpoint is forgotten, unless its pace shortens its
			// queue (up to maxPaced of those are remembered) or it waits
			// for a rate-limit slot (poll forgets it once the wait is over).
			if d.idle(ep) && !d.cfg.Now().Before(ep.rateWait) {
				delete(d.endpoints, id)
			}
			d.mu.Unlock()
			return
		}
		c := ep.queue[0]
		ep.queue[0] = nil
		ep.queue = ep.queue[1:]
		now := d.cfg.Now()
		for ep.reading != nil && !ep.stale(c.seq) && now.Sub(c.at) >= endpointRecheck {
			// Another worker reads the endpoint again: its answer is
			// waited for (endpointState.reading).
			reading := ep.reading
			d.mu.Unlock()
			<-reading
			d.mu.Lock()
			now = d.cfg.Now()
		}
		// (A clock stepped back since the last read reads again too: it
		// would not for as long as it stepped back.)
		if !ep.stale(c.seq) && now.Sub(c.at) >= endpointRecheck && (now.Sub(ep.checked) >= endpointRecheck || now.Before(ep.checked)) {
			ep.checked = now
			polls := d.polls
			reading := make(chan struct{})
			ep.reading = reading
			d.mu.Unlock()
			e, ok := d.reread(ctx, id)
			d.mu.Lock()
			ep.reading = nil
			close(reading)
			switch {
			case !ok:
			case e == nil || !e.Enabled:
				// Disabled (or deleted) by its user: what every poll up
				// to the read may have claimed of it is released.
				ep.staleUpTo = max(ep.staleUpTo, polls)
			case ep.latest == nil || e.Revision > ep.latest.Revision:
				ep.latest = e
			}
		}
		// Claimed with no rate limit, and so no slot, ahead of the
		// workers, it is released unattempted once the endpoint is known
		// to have one now (by a later claim or a read again): claimed
		// again, it takes a slot. (Attempted, the whole queue went out at
		// once, over the new limit.)
		unslotted := c.job.Endpoint.RateLimit <= 0 && (ep.rate > 0 || ep.latest != nil && ep.latest.Revision > c.job.Endpoint.Revision && ep.latest.RateLimit > 0)
		if l := ep.latest; l != nil && l.Revision > c.job.Endpoint.Revision {
			// Changed since the claim (its URL, secrets, health): the
			// attempt is made to the endpoint as it is now.
			c.job.Endpoint = *l
		}
		at, disabling := c.at, ep.stale(c.seq) || unslotted
		d.mu.Unlock()
		// Start only with time left on the lease to finish and record the
		// attempt; otherwise another claim may already be attempting it.
		start := d.cfg.Now()
		attempted := !disabling && !start.After(at.Add(d.cfg.Lease-d.cfg.Timeout-leaseMargin))
		switch {
		case attempted:
			d.attempt(ctx, c)
		case disabling:
			// Paused by the disable under way (endpointState.disabling),
			// or to take a rate-limit slot (unslotted).
			d.release(ctx, []string{c.job.Delivery.ID})
			d.returnSlot(ctx, id, c.slots)
		default:
			// (Its slot, taken most of a lease ago, is not given back:
			// long past, it frees nothing, or, taken by others since,
			// the store would move their slots back, one more than the
			// rate let through.)
			d.stats.expired.Add(1)
			d.release(ctx, []string{c.job.Delivery.ID})
		}
		took := d.cfg.Now().Sub(start)
		d.mu.Lock()
		delete(d.holding, c.job.Delivery.ID)
		if attempted && ctx.Err() == nil {
			ep.paced(took)
		}
		ep.held--
		d.held--
		d.heldBytes -= len(c.job.Event.Payload)
		low := ep.held <= d.refillBelow(ep) && !ep.wanting
		if low {
			ep.wanting = true
		}
		d.mu.Unlock()
		if low {
			// Its queue is running out: claim more.
			d.Notify()
		}
	}
}

// reread reads endpoint id again: nil when it was deleted; ok false
// when the store could not tell (the attempt goes on as claimed).
func (d *Dispatcher) reread(ctx context.Context, id string) (e *store.Endpoint, ok bool) {
	e, err := d.cfg.Store.GetEndpoint(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, true
	case err != nil:
		if ctx.Err() == nil {
			d.stats.storeErrors.Add(1)
			d.cfg.Logger.Warn("webhook dispatcher: reading an endpoint", "endpoint", id, "err", err)
		}
		return nil, false
	}
	return e, true
}

// release gives leases back, unattempted.
func (d *Dispatcher) release(ctx context.Context, ids []string) {
	if len(ids) == 0 {
		return
	}
	if err := d.cfg.Store.Release(context.WithoutCancel(ctx), d.cfg.Owner, ids); err != nil {
		d.stats.storeErrors.Add(1)
		d.cfg.Logger.Warn("webhook dispatcher: releasing deliveries", "err", err)
	}
}
