package multicast

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/archive"
)

// recPos is the archive position of a record: a message's, a gap
// marker's last.
func recPos(ev *transport.Event) archive.Pos {
	if ev.Kind == transport.EventGap {
		return posOf(ev.Gap.Stream, ev.Gap.To)
	}
	return posOf(ev.Message.Stream, ev.Message.Seq)
}

// TestMergeProperty drives the merger with random feeds, seeded: two
// sessions, the first crashing or not, the live feed losing runs of
// messages, the archive complete but for gap markers, the reader
// handing it over in random batches, either as fast as asked or behind
// the live feed (a recorder that lags: it has only what the live feed
// reached, less a few records), the subscriber joining live or at the
// earliest record, with or without a small buffer; on a quarter of the
// seeds the archive holds every record twice, out of order (two
// recorders of the feed writing one topic), on others it lacks a
// crashed session's last records (its recorder went down with it),
// whether the archive lags the live feed or is ahead of it; on some the
// live feed's first events come only once the replay has read all the
// archive has, and on some of those only after the replay's wait for
// them is over. The reader's next batch is handed only once the merger
// has merged the last (as Receive does), and a replay waiting for a live
// event gets the next, or, when the feed has no more, its Wait passes.
// Every run must end merged with each position accounted for exactly
// once, and no message counted both delivered and a duplicate; and,
// with no live event dropped, no Gap may cover a message the live feed
// delivered, but an open one (transport.Gap.Open) the live messages
// that came after it, each counted late (ArchiveStats.LateLive).
func TestMergeProperty(t *testing.T) {
	seeds := uint64(3000)
	if testing.Short() {
		seeds = 300
	}
	for seed := range seeds {
		if !t.Run(fmt.Sprint(seed), func(t *testing.T) { mergeProperty(t, seed) }) {
			return
		}
	}
}

func mergeProperty(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	// Odd seeds drain the merger partly after a batch of the archive,
	// with their own generator: even seeds replay the scenarios of the
	// test's earlier versions.
	var partial *rand.Rand
	if seed%2 == 1 {
		partial = rand.New(rand.NewPCG(seed, 11))
	}
	na, nb := uint64(20+rng.IntN(40)), uint64(20+rng.IntN(40))
	var arch []transport.Event
	for _, s := range []struct {
		id transport.StreamID
		n  uint64
	}{{sA, na}, {sB, nb}} {
		for seq := uint64(1); seq <= s.n; seq++ {
			if rng.IntN(15) == 0 && seq+2 < s.n {
				arch = append(arch, gapEv(s.id, seq, seq+2, transport.GapSourceDown))
				seq += 2
				continue
			}
			arch = append(arch, msg(s.id, seq))
		}
	}
	var live []transport.Event
	joinAt := uint64(1)
	if rng.IntN(2) == 0 {
		joinAt = 1 + uint64(rng.IntN(int(na-8)))
	}
	session := func(s, replaces transport.StreamID, from, n uint64, crash bool) {
		live = append(live, startEv(s, replaces, from))
		tail := n + 1
		if crash {
			tail = n - uint64(rng.IntN(5))
		}
		for seq := from; seq < tail; seq++ {
			if rng.IntN(8) == 0 && seq < tail-1 {
				to := min(seq+uint64(rng.IntN(4)), tail-1)
				live = append(live, gapEv(s, seq, to, transport.GapUnrecoverable))
				seq = to
				continue
			}
			live = append(live, msg(s, seq))
		}
		if crash {
			if tail <= n {
				live = append(live, gapEv(s, tail, n, transport.GapStreamEnded))
			}
			live = append(live, endEv(s, n, transport.EndReplaced))
		}
	}
	crash := rng.IntN(2) == 0
	session(sA, transport.StreamID{}, joinAt, na, crash)
	session(sB, sA, 1, nb, false)

	// The feed ends with messages: nothing is left to recover.
	live = append(live, msgs(sB, nb+1, nb+3)...)
	arch = append(arch, msgs(sB, nb+1, nb+3)...)
	nb += 3

	if seed%4 == 3 {
		// Two recorders of the feed in one topic, the second d
		// records behind: every record twice, out of order.
		dup := rand.New(rand.NewPCG(seed, 13))
		d := 1 + dup.IntN(8)
		var two []transport.Event
		for i := range arch {
			two = append(two, arch[i])
			if i >= d {
				two = append(two, arch[i-d])
			}
		}
		arch = append(two, arch[max(0, len(arch)-d):]...)
	}
	join := JoinLive()
	if rng.IntN(2) == 0 {
		join = JoinEarliest()
	}
	buffer := 0
	if rng.IntN(2) == 0 {
		buffer = 4 + rng.IntN(8)
	}
	lag := -1 // the recorder has everything
	if rng.IntN(2) == 0 {
		lag = rng.IntN(6) // records behind the live feed
	}
	if seed%4 == 1 && crash {
		// The recorder went down with the publisher: the archive
		// lacks the dead session's last records, with no marker.
		down := rand.New(rand.NewPCG(seed, 17))
		cut := na - uint64(down.IntN(int(na/2)))
		kept := arch[:0]
		for _, ev := range arch {
			if p := recPos(&ev); p.Session == sA.Session && p.Seq >= cut {
				continue
			}
			kept = append(kept, ev)
		}
		arch = kept
	}
	// On some seeds the engine's first events are late: the replay
	// reads all the archive has before the live feed shows anything.
	lateLive := seed%8 == 5
	// On half of those the engine's events come only after the wait
	// for them at the next session is over: the session the replay
	// was in ends with an open Gap, and the live events inside it are
	// late.
	slowLive := seed%16 == 13
	defer func() {
		if t.Failed() {
			t.Logf("seed %d join %v buffer %d lag %d late %v slow %v\nlive %s\narchive %s", seed, join, buffer, lag, lateLive, slowLive, show(live), show(arch))
		}
	}()

	r := newMergeRig(t, join, buffer)
	li := 0
	available := func() int {
		if lag < 0 {
			return len(arch)
		}
		if li == 0 {
			return 0
		}
		reached := startOf(&live[li-1])
		n := 0
		for n < len(arch) && !reached.Less(recPos(&arch[n])) {
			n++
		}
		return max(0, n-lag)
	}
	// received counts the messages handed to the merger, live and
	// archived: each delivered, or dropped as a duplicate, at most once.
	received := 0
	countMsgs := func(evs []transport.Event) {
		for i := range evs {
			if evs[i].Kind == transport.EventMessage {
				received++
			}
		}
	}
	var rd struct {
		gen  uint64
		at   int
		sent bool
	}
	seek := func(c replayCmd) int {
		p, ok := c.start.Pos()
		if !ok {
			return 0
		}
		for i := range arch {
			if !recPos(&arch[i]).Less(p) {
				return i
			}
		}
		return len(arch)
	}
	for range 100000 {
		if !r.cur.stop && len(r.cmds) > 0 && r.cur.gen != rd.gen {
			rd.gen, rd.at, rd.sent = r.cur.gen, seek(r.cur), false
		}
		if r.m.awaiting {
			// The replay waits at the next session for a live event:
			// the next one comes (the engine's events were on their
			// way), or, when the feed has none, Wait passes.
			if li < len(live) && !slowLive {
				countMsgs(live[li : li+1])
				r.live(live[li])
				li++
			} else {
				r.m.awaitOver()
				r.drain()
			}
			continue
		}
		reading := len(r.cmds) > 0 && !r.cur.stop && r.m.replaying
		choice := rng.IntN(3)
		if !reading && li == len(live) {
			break
		}
		if lateLive && li == 0 && rd.at < available() {
			choice = 1 // the archive first, while it has records
		}
		switch {
		case li < len(live) && (choice == 0 || !reading):
			countMsgs(live[li : li+1])
			r.live(live[li])
			li++
		case r.m.pendAt < len(r.m.pend):
			// The application takes what the merger has: the driver
			// hands the reader's next batch only once this one is
			// merged (Receive takes none while popInto returns events).
			r.drainSome(1 + rng.IntN(4))
		case rd.at < available():
			k := min(available()-rd.at, 1+rng.IntN(6))
			want, _ := r.cur.start.Pos()
			countMsgs(arch[rd.at : rd.at+k])
			r.m.archive(&archiveBatch{gen: r.cur.gen, events: append([]transport.Event(nil), arch[rd.at:rd.at+k]...), seeked: !rd.sent, want: want})
			rd.sent, rd.at = true, rd.at+k
			r.commands()
			if partial != nil {
				// The application takes only some of what the merger
				// has: live events and batches arrive while the rest of
				// this one is pending.
				r.drainSome(partial.IntN(4))
			} else {
				r.drain()
			}
		case li == len(live) || rng.IntN(4) == 0:
			if !rd.sent {
				want, _ := r.cur.start.Pos()
				r.m.archive(&archiveBatch{gen: r.cur.gen, seeked: true, want: want})
				rd.sent = true
			}
			r.idle(nil)
		}
	}
	r.drain()
	if r.m.replaying {
		t.Fatalf("still replaying; got %s", show(r.got))
	}
	want := []span{{sA, 1, na}, {sB, 1, nb}}
	if join.kind == joinLive {
		want[0].first = joinAt
	}
	gaps := account(t, r.got, want...)
	delivered := 0
	for i := range r.got {
		if r.got[i].Kind == transport.EventMessage {
			delivered++
		}
	}
	st := r.m.Stats()
	if uint64(delivered)+st.Duplicates > uint64(received) {
		t.Fatalf("%d messages delivered and %d duplicates of %d received: a message counted twice", delivered, st.Duplicates, received)
	}
	if buffer > 0 {
		return
	}
	liveMsgs := map[archive.Pos]bool{}
	for i := range live {
		if live[i].Kind == transport.EventMessage {
			liveMsgs[recPos(&live[i])] = true
		}
	}
	late := uint64(0)
	for _, g := range gaps {
		if g.Open {
			// Live messages inside an open Gap came after it: each
			// counted late, not as a duplicate.
			for p := range liveMsgs {
				if p.Session == g.Stream.Session && p.Seq >= g.From {
					late++
				}
			}
			if late > st.LateLive || uint64(delivered)+st.Duplicates+late > uint64(received) {
				t.Fatalf("open gap %v covers %d messages of the live feed: %d live events counted late, %d messages delivered and %d duplicates of %d received: %s",
					g, late, st.LateLive, delivered, st.Duplicates, received, show(r.got))
			}
			continue
		}
		if g.Reason == transport.GapSourceDown {
			continue // the archive's marker
		}
		for seq := g.From; seq <= g.To; seq++ {
			if liveMsgs[posOf(g.Stream, seq)] {
				t.Fatalf("gap %v covers %d, which the live feed delivered: %s", g, seq, show(r.got))
			}
		}
	}
}
