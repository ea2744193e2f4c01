package webhook

import (
	"container/heap"
	"time"
)

// dedup remembers webhook-ids so that no signed request is handled twice,
// bounded by count, with no I/O and no clock of its own (every call takes
// now). An id is first "in flight" (begin), then either remembered as
// done (finish ok) or forgotten (finish not ok) so the sender's retry is
// processed.
//
// Each id carries the last instant at which a request seen with it still
// passes the timestamp check, replayable (webhook-timestamp + Tolerance,
// the latest over the requests seen with the id). A done id is dropped
// only once now is past replayable, when a replay of any of those
// requests would be refused for its timestamp anyway: it expires at
// finish + ttl, or at replayable if that is later, and when the cache is
// full the done id with the earliest replayable already past is evicted
// to make room. With none (every entry in flight, or done but still
// replayable) begin refuses the new id: refusing a request the sender
// retries later is safe, handling a replay a second time is not. An id in
// flight is never dropped (its retry would be handled concurrently).
//
// begin refuses a request whose own replayable is already past
// (seenStale): the check uses the same now as the drops, so a replay that
// passed the Verifier just before its entry was dropped is still refused,
// whatever the Verifier's clock. This holds as long as now, from call to
// call, does not go back.
//
// begin, finish and expiry are O(log n): the done ids are in two
// min-heaps, by expiry and by replayable (which are not in the same order:
// timestamps are anywhere within ±Tolerance of the clock and handling
// takes its time).
type dedup struct {
	max     int
	ttl     time.Duration
	byID    map[string]*dedupEntry // in flight and done
	heaps   [2]entryHeap           // of done entries: [byExpiry], [byReplayable]
	evicted uint64                 // done ids dropped before expiry because the cache was full
}

type dedupEntry struct {
	id         string
	replayable time.Time // a request seen with this id passes the timestamp check until then, inclusive
	expires    time.Time // done: dropped once now is past it; never before replayable
	done       bool
	pos        [2]int // index in each of dedup.heaps while done
}

// The heaps of dedup, and the time each is ordered on.
const (
	byExpiry     = 0 // dedupEntry.expires
	byReplayable = 1 // dedupEntry.replayable
)

// seen is what begin found.
type seen int

const (
	seenNew      seen = iota // not known: now in flight
	seenInFlight             // another request with this id is being handled
	seenDone                 // handled successfully before
	seenFull                 // not known, and every entry is in flight or still replayable: not recorded
	seenStale                // the request's own timestamp is out of tolerance by now: not recorded
)

func newDedup(max int, ttl time.Duration) *dedup {
	d := &dedup{max: max, ttl: ttl, byID: make(map[string]*dedupEntry)}
	d.heaps[byExpiry].k = byExpiry
	d.heaps[byReplayable].k = byReplayable
	return d
}

// expire drops done entries whose expiry is past.
func (d *dedup) expire(now time.Time) {
	h := &d.heaps[byExpiry]
	for len(h.s) > 0 && now.After(h.s[0].expires) {
		d.removeDone(h.s[0])
	}
}

func (d *dedup) removeDone(ent *dedupEntry) {
	delete(d.byID, ent.id)
	heap.Remove(&d.heaps[byExpiry], ent.pos[byExpiry])
	heap.Remove(&d.heaps[byReplayable], ent.pos[byReplayable])
}

// begin looks id up for a verified request that passes the timestamp
// check until replayable (its webhook-timestamp + Tolerance) and, when
// the id is new, records it as in flight, evicting a done entry whose
// replayable is past if the cache is full; with no such entry it records
// nothing and returns seenFull. A known id keeps the later of its
// replayable and this one, since this request can be replayed too.
func (d *dedup) begin(id string, replayable, now time.Time) seen {
	d.expire(now)
	if replayable.Before(now) {
		return seenStale
	}
	if ent, ok := d.byID[id]; ok {
		d.extend(ent, replayable)
		if !ent.done {
			return seenInFlight
		}
		return seenDone
	}
	for len(d.byID) >= d.max {
		h := &d.heaps[byReplayable]
		if len(h.s) == 0 || !now.After(h.s[0].replayable) {
			return seenFull
		}
		d.removeDone(h.s[0])
		d.evicted++
	}
	d.byID[id] = &dedupEntry{id: id, replayable: replayable}
	return seenNew
}

// extend moves ent's replayable (and, if need be, its expiry) to
// replayable when that is later.
func (d *dedup) extend(ent *dedupEntry, replayable time.Time) {
	if !replayable.After(ent.replayable) {
		return
	}
	ent.replayable = replayable
	if !ent.done {
		return
	}
	heap.Fix(&d.heaps[byReplayable], ent.pos[byReplayable])
	if ent.expires.Before(replayable) {
		ent.expires = replayable
		heap.Fix(&d.heaps[byExpiry], ent.pos[byExpiry])
	}
}

// finish ends the in-flight id: remembered until now+ttl (or its
// replayable, if later) when ok, forgotten otherwise.
func (d *dedup) finish(id string, ok bool, now time.Time) {
	ent, found := d.byID[id]
	if !found || ent.done {
		return
	}
	if !ok {
		delete(d.byID, id)
		return
	}
	ent.done = true
	ent.expires = now.Add(d.ttl)
	if ent.expires.Before(ent.replayable) {
		ent.expires = ent.replayable
	}
	heap.Push(&d.heaps[byExpiry], ent)
	heap.Push(&d.heaps[byReplayable], ent)
}

// roomAfter is the earliest replayable of the done ids, after which a
// full cache can evict one; false with no done id.
func (d *dedup) roomAfter() (time.Time, bool) {
	h := &d.heaps[byReplayable]
	if len(h.s) == 0 {
		return time.Time{}, false
	}
	return h.s[0].replayable, true
}

func (d *dedup) len() int { return len(d.byID) }

// entryHeap is a container/heap of done entries ordered on one of their
// times (k: byExpiry or byReplayable), keeping each entry's index in
// pos[k] for heap.Fix and heap.Remove.
type entryHeap struct {
	k int
	s []*dedupEntry
}

func (h *entryHeap) at(i int) time.Time {
	if h.k == byExpiry {
		return h.s[i].expires
	}
	return h.s[i].replayable
}

func (h *entryHeap) Len() int           { return len(h.s) }
func (h *entryHeap) Less(i, j int) bool { return h.at(i).Before(h.at(j)) }
func (h *entryHeap) Swap(i, j int) {
	h.s[i], h.s[j] = h.s[j], h.s[i]
	h.s[i].pos[h.k] = i
	h.s[j].pos[h.k] = j
}

func (h *entryHeap) Push(x any) {
	ent := x.(*dedupEntry)
	ent.pos[h.k] = len(h.s)
	h.s = append(h.s, ent)
}

func (h *entryHeap) Pop() any {
	n := len(h.s) - 1
	ent := h.s[n]
	h.s[n] = nil
	h.s = h.s[:n]
	return ent
}
