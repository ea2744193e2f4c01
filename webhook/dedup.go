package webhook

import (
	"container/list"
	"time"
)

// dedup remembers webhook-ids, bounded by count and expiring after a
// fixed time, with no I/O and no clock of its own (every call takes
// now). An id is first "in flight" (begin), then either remembered as
// done (finish ok) until it expires, or forgotten (finish not ok) so the
// sender's retry is processed.
type dedup struct {
	max     int
	ttl     time.Duration
	byID    map[string]*list.Element
	order   list.List // of *dedupEntry, oldest first; all share ttl, so expiry order too
	evicted uint64    // removed before their time because the cache was full
}

type dedupEntry struct {
	id       string
	expires  time.Time
	inFlight bool
}

// seen is what begin found.
type seen int

const (
	seenNew      seen = iota // not known: now in flight
	seenInFlight             // another request with this id is being handled
	seenDone                 // handled successfully before
)

func newDedup(max int, ttl time.Duration) *dedup {
	return &dedup{max: max, ttl: ttl, byID: make(map[string]*list.Element)}
}

// expire drops entries whose time has come.
func (d *dedup) expire(now time.Time) {
	for e := d.order.Front(); e != nil; e = d.order.Front() {
		ent := e.Value.(*dedupEntry)
		if ent.expires.After(now) {
			return
		}
		d.remove(e)
	}
}

func (d *dedup) remove(e *list.Element) {
	delete(d.byID, e.Value.(*dedupEntry).id)
	d.order.Remove(e)
}

// begin looks id up and, when it is new, records it as in flight,
// evicting the oldest entry if the cache is full.
func (d *dedup) begin(id string, now time.Time) seen {
	d.expire(now)
	if e, ok := d.byID[id]; ok {
		if e.Value.(*dedupEntry).inFlight {
			return seenInFlight
		}
		return seenDone
	}
	for d.order.Len() >= d.max {
		d.remove(d.order.Front())
		d.evicted++
	}
	d.byID[id] = d.order.PushBack(&dedupEntry{id: id, expires: now.Add(d.ttl), inFlight: true})
	return seenNew
}

// finish ends the in-flight id: remembered until now+ttl when ok,
// forgotten otherwise.
func (d *dedup) finish(id string, ok bool, now time.Time) {
	e, found := d.byID[id]
	if !found || !e.Value.(*dedupEntry).inFlight {
		return
	}
	if !ok {
		d.remove(e)
		return
	}
	ent := e.Value.(*dedupEntry)
	ent.inFlight = false
	ent.expires = now.Add(d.ttl)
	d.order.MoveToBack(e)
}

func (d *dedup) len() int { return d.order.Len() }
