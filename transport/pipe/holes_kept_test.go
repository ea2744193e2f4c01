package pipe

import (
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestHoleBelowTheTailIsNotHeld: a position of a log's stream older
// than its oldest record in a full tail (a write refused while up to
// MaxInFlight later ones were accepted) is not known to be held: it is
// looked for further back, where a hole found in a page is kept too. A
// feed's is taken as held (see run: written again, it would put the
// feed out of order in the destination).
func TestHoleBelowTheTailIsNotHeld(t *testing.T) {
	dst := transport.StreamID{Topic: "dest"}
	c := newCore(t, 0)
	if _, err := c.Resume(shifted(5000, tailOf(dst, feedA, 1001, 1000+DefaultTailRecords))); err != nil {
		t.Fatal(err)
	}
	if _, ws := feed(t, c, msg(feedA, 500)); len(ws) != 0 {
		t.Errorf("feed: wrote %+v, want nothing (older than the tail: taken as held)", ws)
	}

	c = newCore(t, 0)
	if _, err := c.ResumeAcknowledged(shifted(5000, tailOf(dst, srcLog, 2001, 2000+DefaultTailRecords))); err != nil {
		t.Fatal(err)
	}
	d, before, ok := c.LookFor(srcLog, 1500, DefaultMaxLookback)
	if !ok || d != dst || before != 5000 {
		t.Fatalf("LookFor(1500) = %v %d %v, want the page of %v before 5000", d, before, ok, dst)
	}
	page := shifted(5000-1000, tailWithout(dst, srcLog, 1001, 2000, 1500))
	c.AddPage(dst, page, LookbackPage)
	if _, _, ok := c.LookFor(srcLog, 1500, DefaultMaxLookback); ok {
		t.Errorf("looks back again once the page reaches 1500")
	}
	if _, ws := feed(t, c, msg(srcLog, 1499), msg(srcLog, 1500), msg(srcLog, 1501)); len(ws) != 1 || ws[0].origin.Seq != 1500 {
		t.Errorf("log: wrote %+v, want 1500 alone (the hole of the page)", ws)
	}
}

// TestHoleInAPageIsKept: a stream found only further back than the
// tail keeps the holes of the page it is found in.
func TestHoleInAPageIsKept(t *testing.T) {
	dst := transport.StreamID{Topic: "dest"}
	c := newCore(t, 0)
	if _, err := c.ResumeAcknowledged(shifted(5000, tailOf(dst, part0, 1, DefaultTailRecords))); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := c.LookFor(srcLog, 1, DefaultMaxLookback); !ok {
		t.Fatal("does not look back")
	}
	c.AddPage(dst, shifted(5000-100, tailWithout(dst, srcLog, 1, 101, 50)), LookbackPage)
	if _, ws := feed(t, c, msg(srcLog, 49), msg(srcLog, 50), msg(srcLog, 51)); len(ws) != 1 || ws[0].origin.Seq != 50 {
		t.Errorf("wrote %+v, want 50 alone", ws)
	}
}

// TestHolesKeptOverTwoResumes: a stream found by two Resume calls keeps
// the positions neither read held.
func TestHolesKeptOverTwoResumes(t *testing.T) {
	c := newCore(t, 0)
	if _, err := c.ResumeAcknowledged(tailWithout(part0, srcLog, 1, 10, 6)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResumeAcknowledged(tailOf(part0, srcLog, 11, 20)); err != nil {
		t.Fatal(err)
	}
	if _, ws := feed(t, c, msg(srcLog, 5), msg(srcLog, 6), msg(srcLog, 7), msg(srcLog, 20), msg(srcLog, 21)); len(ws) != 2 || ws[0].origin.Seq != 6 || ws[1].origin.Seq != 21 {
		t.Errorf("wrote %+v, want 6 and 21", ws)
	}
}

// TestHeldRunsBounded: a stream read with more holes than a Core keeps
// forgets its oldest runs of held positions, counted: they are written
// again if given again (never taken as held).
func TestHeldRunsBounded(t *testing.T) {
	var missing []uint64
	for s := uint64(2); s <= 2*maxHeldRuns+10; s += 2 {
		missing = append(missing, s)
	}
	c := newCore(t, 0)
	if _, err := c.ResumeAcknowledged(tailWithout(part0, srcLog, 1, 2*maxHeldRuns+11, missing...)); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.HeldRunsDropped != 6 {
		t.Errorf("dropped %d runs, want 6", s.HeldRunsDropped)
	}
	_, ws := feed(t, c, msg(srcLog, 1), msg(srcLog, 2), msg(srcLog, 2*maxHeldRuns+11), msg(srcLog, 2*maxHeldRuns+12))
	if len(ws) != 3 || ws[0].origin.Seq != 1 || ws[1].origin.Seq != 2 {
		t.Errorf("wrote %+v, want 1, 2 and the next", ws)
	}
	// A feed's oldest holes are taken as held instead.
	c = newCore(t, 0)
	if _, err := c.Resume(tailWithout(part0, feedA, 1, 2*maxHeldRuns+11, missing...)); err != nil {
		t.Fatal(err)
	}
	_, ws = feed(t, c, msg(feedA, 10), msg(feedA, 12), msg(feedA, 14))
	if s := c.Stats(); s.HeldRunsDropped != 6 || len(ws) != 1 || ws[0].origin.Seq != 14 {
		t.Errorf("feed: dropped %d runs, wrote %+v; want 6, and 14 alone", s.HeldRunsDropped, ws)
	}
}

// TestGapOverAHoleIsMarked: a Gap of the source whose last position
// the destination holds, but not all before it (a hole: a refused
// write), is written as a marker of what the destination lacks, so
// the destination shows the loss instead of a silent hole.
func TestGapOverAHoleIsMarked(t *testing.T) {
	c := newCore(t, 0)
	if _, err := c.ResumeAcknowledged(tailWithout(part0, srcLog, 1, 10, 5)); err != nil {
		t.Fatal(err)
	}
	_, ws := feed(t, c, gapEv(srcLog, 3, 8, transport.GapUnrecoverable), gapEv(srcLog, 6, 9, transport.GapUnrecoverable), msg(srcLog, 11))
	want := transport.Gap{Stream: srcLog, From: 5, To: 8, Reason: transport.GapUnrecoverable}
	if len(ws) != 2 || !ws[0].marker || ws[0].gap != want || ws[1].origin.Seq != 11 {
		t.Errorf("wrote %+v, want a marker of 5..8, then 11", ws)
	}
}
