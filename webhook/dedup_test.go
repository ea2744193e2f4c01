package webhook

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

const tol = DefaultTolerance

// handled records id as handled at now, for a request with timestamp ts.
func handled(t *testing.T, d *dedup, id string, ts, now time.Time) {
	t.Helper()
	if s := d.begin(id, ts.Add(tol), now); s != seenNew {
		t.Fatalf("begin(%s) = %d, want seenNew", id, s)
	}
	d.finish(id, true, now)
}

// TestDedupFullOfReplayableRefuses: a full cache of done ids whose
// timestamps are still within tolerance refuses a new id rather than
// forget one, and still answers a replay of each as done; just past the
// earliest timestamp + tolerance (not at it: the Verifier still accepts
// a timestamp exactly tolerance old) that id is evicted for a new one.
func TestDedupFullOfReplayableRefuses(t *testing.T) {
	d := newDedup(3, 24*time.Hour)
	handled(t, d, "a", t0, t0)
	handled(t, d, "b", t0.Add(time.Second), t0.Add(time.Second))
	handled(t, d, "c", t0.Add(2*time.Second), t0.Add(2*time.Second))
	for _, now := range []time.Time{t0.Add(time.Minute), t0.Add(tol)} {
		if s := d.begin("new", now.Add(tol), now); s != seenFull {
			t.Fatalf("at %s: new id on a full cache of replayable ids = %d, want seenFull", now.Sub(t0), s)
		}
		for _, id := range []string{"a", "b", "c"} {
			// The replay of the handled request itself: same timestamp.
			if s := d.begin(id, t0.Add(tol), now); s != seenDone {
				t.Fatalf("at %s: replay of %s = %d, want seenDone", now.Sub(t0), id, s)
			}
		}
	}
	if d.evicted != 0 || d.len() != 3 {
		t.Fatalf("evicted %d, remembered %d", d.evicted, d.len())
	}
	if room, ok := d.roomAfter(); !ok || !room.Equal(t0.Add(tol)) {
		t.Fatalf("roomAfter = %v %v, want t0+tol", room, ok)
	}
	now := t0.Add(tol + time.Nanosecond)
	if s := d.begin("new", now.Add(tol), now); s != seenNew {
		t.Fatalf("new id once a's timestamp is out of tolerance = %d, want seenNew", s)
	}
	if _, ok := d.byID["a"]; ok || d.evicted != 1 {
		t.Fatalf("a still remembered, or evicted %d, want a evicted", d.evicted)
	}
	for _, id := range []string{"b", "c"} {
		if _, ok := d.byID[id]; !ok {
			t.Fatalf("%s forgotten", id)
		}
	}
}

// TestDedupEvictsByTimestamp: the id evicted is the one whose timestamp
// + tolerance passed, not the one handled first.
func TestDedupEvictsByTimestamp(t *testing.T) {
	d := newDedup(2, 24*time.Hour)
	handled(t, d, "future", t0.Add(4*time.Minute), t0) // replayable until t0+9m
	handled(t, d, "past", t0.Add(-4*time.Minute), t0)  // replayable until t0+1m
	now := t0.Add(2 * time.Minute)
	if s := d.begin("new", now.Add(tol), now); s != seenNew {
		t.Fatalf("begin(new) = %d, want seenNew", s)
	}
	if _, ok := d.byID["past"]; ok {
		t.Fatal("past kept")
	}
	if s := d.begin("future", t0.Add(4*time.Minute+tol), now); s != seenDone {
		t.Fatalf("replay of future = %d, want seenDone", s)
	}
}

// TestDedupRetryExtends: a retry of a handled (or in-flight) id comes
// with a later timestamp and can be replayed too: the id is kept until
// the retry's timestamp + tolerance.
func TestDedupRetryExtends(t *testing.T) {
	for _, inFlight := range []bool{false, true} {
		t.Run(fmt.Sprintf("inFlight=%v", inFlight), func(t *testing.T) {
			d := newDedup(1, 24*time.Hour)
			retryAt := t0.Add(4 * time.Minute)
			if inFlight {
				d.begin("a", t0.Add(tol), t0)
				if s := d.begin("a", retryAt.Add(tol), retryAt); s != seenInFlight {
					t.Fatalf("retry = %d, want seenInFlight", s)
				}
				d.finish("a", true, retryAt)
			} else {
				handled(t, d, "a", t0, t0)
				if s := d.begin("a", retryAt.Add(tol), retryAt); s != seenDone {
					t.Fatalf("retry = %d, want seenDone", s)
				}
			}
			now := t0.Add(tol + time.Minute) // past the first request's, within the retry's
			if s := d.begin("b", now.Add(tol), now); s != seenFull {
				t.Fatalf("new id within the retry's tolerance = %d, want seenFull", s)
			}
			if s := d.begin("a", retryAt.Add(tol), now); s != seenDone {
				t.Fatalf("replay of the retry = %d, want seenDone", s)
			}
			now = retryAt.Add(tol + time.Nanosecond)
			if s := d.begin("b", now.Add(tol), now); s != seenNew {
				t.Fatalf("new id past the retry's tolerance = %d, want seenNew", s)
			}
		})
	}
}

// TestDedupTTLNeverBeforeTimestamp: an id expires after ttl, but never
// while a request seen with it is within tolerance (a timestamp up to
// tolerance in the future keeps it longer than a short ttl).
func TestDedupTTLNeverBeforeTimestamp(t *testing.T) {
	d := newDedup(10, time.Minute)
	handled(t, d, "future", t0.Add(tol), t0) // replayable until t0+10m
	handled(t, d, "now", t0, t0)             // replayable until t0+5m
	now := t0.Add(tol + time.Second)
	if s := d.begin("future", t0.Add(2*tol), now); s != seenDone {
		t.Fatalf("replay of future past the ttl = %d, want seenDone", s)
	}
	if _, ok := d.byID["now"]; ok {
		t.Fatal("now kept past its ttl and tolerance")
	}
	now = t0.Add(2*tol + time.Nanosecond)
	if s := d.begin("future", now.Add(tol), now); s != seenNew {
		t.Fatalf("future past its tolerance = %d, want seenNew (expired)", s)
	}
	if d.evicted != 0 {
		t.Fatalf("evicted %d, want 0 (expired, not evicted)", d.evicted)
	}
	// The ttl, when longer, is what counts.
	d = newDedup(10, time.Hour)
	handled(t, d, "a", t0, t0)
	if s := d.begin("a", t0.Add(30*time.Minute+tol), t0.Add(30*time.Minute)); s != seenDone {
		t.Fatalf("within the ttl = %d, want seenDone", s)
	}
	now = t0.Add(time.Hour + time.Nanosecond)
	if s := d.begin("a", now.Add(tol), now); s != seenNew {
		t.Fatalf("past the ttl = %d, want seenNew", s)
	}
}

// TestDedupStale: a request whose timestamp + tolerance is already past
// the dedup clock is refused and not recorded, even for an id the cache
// no longer holds: its replay cannot get through by arriving just as its
// entry is dropped.
func TestDedupStale(t *testing.T) {
	d := newDedup(1, 24*time.Hour)
	handled(t, d, "a", t0, t0)
	now := t0.Add(tol + time.Nanosecond)
	if s := d.begin("b", now.Add(tol), now); s != seenNew {
		t.Fatalf("begin(b) = %d, want seenNew (a evicted)", s)
	}
	if s := d.begin("a", t0.Add(tol), now); s != seenStale {
		t.Fatalf("replay of a after its eviction = %d, want seenStale", s)
	}
	if _, ok := d.byID["a"]; ok {
		t.Fatal("stale request recorded")
	}
	if s := d.begin("c", t0.Add(tol), t0.Add(tol)); s != seenFull {
		t.Fatalf("timestamp exactly tolerance old = %d, want it looked up (seenFull)", s)
	}
}

// TestDedupInFlightNeverEvicted: with every entry in flight a new id is
// refused, whatever the timestamps.
func TestDedupInFlightNeverEvicted(t *testing.T) {
	d := newDedup(2, time.Hour)
	d.begin("a", t0.Add(tol), t0)
	d.begin("b", t0.Add(tol), t0)
	now := t0.Add(2 * time.Hour)
	if s := d.begin("c", now.Add(tol), now); s != seenFull {
		t.Fatalf("begin(c) = %d, want seenFull", s)
	}
	if _, ok := d.roomAfter(); ok {
		t.Fatal("roomAfter with nothing done")
	}
	d.finish("a", false, now)
	if s := d.begin("c", now.Add(tol), now); s != seenNew {
		t.Fatalf("begin(c) after a failed = %d, want seenNew", s)
	}
}

// TestDedupHeaps: many ids with timestamps scattered within tolerance
// come and go, through a cache too small for them: no handled id is
// forgotten while its timestamp is within tolerance, none is kept past
// its expiry, and the heaps stay consistent.
func TestDedupHeaps(t *testing.T) {
	d := newDedup(200, 2*tol)
	now := t0
	replayable := map[string]time.Time{} // handled ids not yet out of tolerance
	full := 0
	for i := range 2000 {
		now = now.Add(time.Second)
		ts := now.Add(time.Duration((i*7919)%600-300) * time.Second) // within ±5m
		id := fmt.Sprint(i)
		switch s := d.begin(id, ts.Add(tol), now); s {
		case seenNew:
			ok := i%5 != 0
			d.finish(id, ok, now)
			if ok {
				replayable[id] = ts.Add(tol)
			}
		case seenFull:
			full++
		default:
			t.Fatalf("begin(%s) = %d", id, s)
		}
		for id, until := range replayable {
			if now.After(until) {
				delete(replayable, id)
			} else if ent := d.byID[id]; ent == nil || !ent.done {
				t.Fatalf("%s forgotten at %s, within tolerance until %s", id, now.Sub(t0), until.Sub(t0))
			}
		}
		for _, ent := range d.byID {
			if ent.done && now.After(ent.expires) {
				t.Fatalf("%s kept past its expiry", ent.id)
			}
		}
		for k := range d.heaps {
			h := &d.heaps[k]
			for j, ent := range h.s {
				if ent.pos[k] != j {
					t.Fatalf("heap %d: %s at %d says %d", k, ent.id, j, ent.pos[k])
				}
				if p := (j - 1) / 2; j > 0 && h.Less(j, p) {
					t.Fatalf("heap %d out of order at %d", k, j)
				}
			}
			if len(h.s) > d.len() {
				t.Fatalf("heap %d holds %d, cache %d", k, len(h.s), d.len())
			}
		}
	}
	if d.evicted == 0 || full == 0 {
		t.Fatalf("evicted %d, refused %d: the test does not reach a full cache", d.evicted, full)
	}
}
