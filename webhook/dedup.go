package webhook

import (
	"container/list"
	"time"
)

// dedup remembers webhook-ids, bounded by count and expiring after a
// fixed time, with no I/O and no clock of its own (every call takes
// now). An id is first "in flight" (begin), then either remembered as
// done (finish ok) until it expires, or forgotten (finish not ok) so the
// sender's retry is processed. When the cache is full, the oldest done id
// is evicted; an id in flight never is (its retry would be handled
// concurrently), so with every entry in flight begin refuses a new id.
type dedup struct {
	max     int
	ttl     time.Duration
	byID    map[string]*dedupEntry // in flight and done
	done    list.List              // of *dedupEntry, oldest first; all share ttl, so expiry order too
	evicted uint64                 // done ids removed before their time because the cache was full
}

type dedupEntry struct {
	id      string
	expires time.Time
	elem    *list.Element // in done; nil while in flight
}

// seen is what begin found.
type seen int

const (
	seenNew      seen = iota // not known: now in flight
	seenInFlight             // another request with this id is being handled
	seenDone                 // handled successfully before
	seenFull                 // not known, and every entry is in flight: not recorded
)

func newDedup(max int, ttl time.Duration) *dedup {
	return &dedup{max: max, ttl: ttl, byID: make(map[string]*dedupEntry)}
}

// expire drops done entries whose time has come.
func (d *dedup) expire(now time.Time) {
	for e := d.done.Front(); e != nil; e = d.done.Front() {
		ent := e.Value.(*dedupEntry)
		if ent.expires.After(now) {
			return
		}
		d.removeDone(ent)
	}
}

func (d *dedup) removeDone(ent *dedupEntry) {
	delete(d.byID, ent.id)
	d.done.Remove(ent.elem)
}

// begin looks id up and, when it is new, records it as in flight,
// evicting the oldest done entry if the cache is full; with no done
// entry to evict it records nothing and returns seenFull.
func (d *dedup) begin(id string, now time.Time) seen {
	d.expire(now)
	if ent, ok := d.byID[id]; ok {
		if ent.elem == nil {
			return seenInFlight
		}
		return seenDone
	}
	for len(d.byID) >= d.max {
		e := d.done.Front()
		if e == nil {
			return seenFull
		}
		d.removeDone(e.Value.(*dedupEntry))
		d.evicted++
	}
	d.byID[id] = &dedupEntry{id: id}
	return seenNew
}

// finish ends the in-flight id: remembered until now+ttl when ok,
// forgotten otherwise.
func (d *dedup) finish(id string, ok bool, now time.Time) {
	ent, found := d.byID[id]
	if !found || ent.elem != nil {
		return
	}
	if !ok {
		delete(d.byID, id)
		return
	}
	ent.expires = now.Add(d.ttl)
	ent.elem = d.done.PushBack(ent)
}

func (d *dedup) len() int { return len(d.byID) }
