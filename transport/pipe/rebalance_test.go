package pipe

import (
	"context"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestPipeRereadsTheDestinationForAnAssignedStream: a member of a
// consumer group, running, is given partition 1 by a rebalance. Its
// previous owner wrote it up to 200 since this pipe read the
// destination's tail (up to 100), and its group committed 150 only: the
// source delivers 151 on. With Config.Tail the pipe reads the
// destination again when the partition starts, and drops 151..200:
// every position is in the destination once.
func TestPipeRereadsTheDestinationForAnAssignedStream(t *testing.T) {
	d := &dest{}
	d.holding(srcP1, 0, 100)
	p := midRunAssignment(t, d, d, func() {})
	times := map[transport.StreamID]map[uint64]int{srcP0: {}, srcP1: {}}
	d.mu.Lock()
	for i := range d.held {
		o, _, _ := transport.ParseOrigin(d.held[i].Headers)
		times[o.Stream][o.Seq]++
	}
	d.mu.Unlock()
	for s, last := range map[transport.StreamID]uint64{srcP0: 19, srcP1: 210} {
		for pos := uint64(0); pos <= last; pos++ {
			if times[s][pos] != 1 {
				t.Errorf("%s %d is in the destination %d times", s, pos, times[s][pos])
			}
		}
	}
	if st := p.Stats(); st.Forwarded != 10+10 || st.Skipped != 50 {
		t.Errorf("forwarded %d, skipped %d: want 20 and 50", st.Forwarded, st.Skipped)
	}
}

// TestRereadLooksBackFromTheNewTail: a stream the destination's tail,
// read again (Reread), does not reach is looked for from where that
// tail starts, not from where the tail read when the pipe started did:
// what was written between them is read too.
func TestRereadLooksBackFromTheNewTail(t *testing.T) {
	dst := transport.StreamID{Topic: "dest"}
	c := newCore(t, 0)
	if _, err := c.ResumeAcknowledged(shifted(5000, tailOf(dst, part0, 1, DefaultTailRecords))); err != nil {
		t.Fatal(err)
	}
	if err := c.Reread(srcLog, shifted(6000, tailOf(dst, part0, 1001, 1000+DefaultTailRecords))); err != nil {
		t.Fatal(err)
	}
	if d, before, ok := c.LookFor(srcLog, 7, DefaultMaxLookback); !ok || d != dst || before != 6000 {
		t.Errorf("LookFor = %v %d %v, want the page of %v before 6000", d, before, ok, dst)
	}
	if c.NeedsReread(startEv(srcLog, 7)) || !c.NeedsReread(startEv(part1, 7)) || c.NeedsReread(startEv(feedA, 7)) {
		t.Errorf("NeedsReread: want false for the stream just read for, true for another log's, false for a feed's")
	}
	feed(t, c, startEv(srcLog, 7))
	if !c.NeedsReread(startEv(srcLog, 7)) {
		t.Errorf("NeedsReread false for a stream started again")
	}
}

// The source's partitions in midRunAssignment.
var (
	srcP0 = transport.StreamID{Topic: "src", Partition: 0}
	srcP1 = transport.StreamID{Topic: "src", Partition: 1}
)

// midRunAssignment runs a pipe from an acknowledged source into d,
// whose tail, with 0..9 of srcP0, it resumes from, with tail as its
// Config.Tail: srcP0's 10..19, then (a rebalance) srcP1's 151..210,
// after its previous owner wrote 101..200 to d and beforeP1 was
// called. It returns the pipe once both are acknowledged, Run returned
// and the source saw no acknowledgement of what d did not hold.
func midRunAssignment(t *testing.T, d *dest, tail transport.TailReader, beforeP1 func()) *Pipe {
	t.Helper()
	return midRunAssignmentConfig(t, d, Config{Tail: tail}, beforeP1)
}

// midRunAssignmentConfig is midRunAssignment of a pipe configured by cfg.
func midRunAssignmentConfig(t *testing.T, d *dest, cfg Config, beforeP1 func()) *Pipe {
	t.Helper()
	d.holding(srcP0, 0, 9)
	given := map[transport.StreamID][]uint64{}
	src := newAckingSource(400, d.holds(given))
	// given is written before Run, which reads it (the acknowledgements' check).
	for pos := uint64(10); pos <= 19; pos++ {
		given[srcP0] = append(given[srcP0], pos)
	}
	for pos := uint64(151); pos <= 210; pos++ {
		given[srcP1] = append(given[srcP1], pos)
	}
	send := func(s transport.StreamID, from, to uint64) {
		src.events <- *startEv(s, from)
		for pos := from; pos <= to; pos++ {
			src.events <- *msg(s, pos)
		}
	}
	p, err := New(src, plainDest{d}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	resumed, _ := d.Tail(context.Background(), DefaultTailRecords)
	if _, err := p.Resume(resumed); err != nil {
		t.Fatal(err)
	}
	send(srcP0, 10, 19)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runPipe(ctx, p)
	waitAcked(t, src, srcP0, 19)

	d.mu.Lock()
	d.holding(srcP1, 101, 200) // by the partition's previous owner
	d.mu.Unlock()
	beforeP1()
	send(srcP1, 151, 210)
	waitAcked(t, src, srcP1, 210)
	cancel()
	if err := waitRun(t, done); err != nil {
		t.Fatal(err)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if len(src.errs) > 0 {
		t.Errorf("acknowledgements: %v", src.errs)
	}
	return p
}
