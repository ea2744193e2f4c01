package pipe

import (
	"context"
	"sync"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// countingTail is a destination's TailReader that counts the reads and
// the records they return.
type countingTail struct {
	d              *dest
	mu             sync.Mutex
	calls, records int
	full           int // reads of DefaultTailRecords per destination stream
}

func (c *countingTail) Tail(ctx context.Context, n int) ([]transport.Message, error) {
	tail, err := c.d.Tail(ctx, n)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	c.records += len(tail)
	if n >= DefaultTailRecords {
		c.full++
	}
	return tail, err
}

func (c *countingTail) counts() (calls, records, full int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls, c.records, c.full
}

// timesHeld counts how often the destination holds each source
// position.
func timesHeld(d *dest) map[transport.StreamID]map[uint64]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	times := map[transport.StreamID]map[uint64]int{}
	for i := range d.held {
		o, _, _ := transport.ParseOrigin(d.held[i].Headers)
		if times[o.Stream] == nil {
			times[o.Stream] = map[uint64]int{}
		}
		times[o.Stream][o.Seq]++
	}
	return times
}

// TestPipeFirstStartsReadOnlyWhatIsNew: a member of a consumer group of
// 8 partitions starts; the destination holds 800 records (each
// partition up to 99), read once by Resume. The group committed 50 of
// each, so each partition starts there. Before, each of the 8 starts
// read the destination's last DefaultTailRecords again (800 records and
// more each, for nothing written since by another); now each start reads only what the
// destination was given since the pipe last read it (nothing, or the
// pipe's own writes): fewer records in all than one start-up tail, and
// no read of a full tail. Every position is in the destination once.
// Then a rebalance gives partition 3 back after another member wrote
// 110..149 of it and committed 119: that start reads what was written,
// and 120..149 are dropped.
func TestPipeFirstStartsReadOnlyWhatIsNew(t *testing.T) {
	const parts = 8
	d := &dest{}
	for p := range int32(parts) {
		d.holding(transport.StreamID{Topic: "src", Partition: p}, 0, 99)
	}
	tr := &countingTail{d: d}
	given := map[transport.StreamID][]uint64{}
	src := newAckingSource(1000, d.holds(given))
	p, err := New(src, plainDest{d}, Config{Tail: tr})
	if err != nil {
		t.Fatal(err)
	}
	resumed, _ := d.Tail(context.Background(), DefaultTailRecords)
	if _, err := p.Resume(resumed); err != nil {
		t.Fatal(err)
	}
	for p := range int32(parts) {
		s := transport.StreamID{Topic: "src", Partition: p}
		for pos := uint64(100); pos <= 109; pos++ {
			given[s] = append(given[s], pos)
		}
		src.events <- *startEv(s, 50)
		for pos := uint64(50); pos <= 109; pos++ {
			src.events <- *msg(s, pos)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runPipe(ctx, p)
	for p := range int32(parts) {
		waitAcked(t, src, transport.StreamID{Topic: "src", Partition: p}, 109)
	}
	calls, records, full := tr.counts()
	if full > 0 || records >= DefaultTailRecords {
		t.Errorf("the first starts of %d partitions read the destination %d times, %d records, %d of them full tails: want fewer records than one tail (%d), no full tail",
			parts, calls, records, full, DefaultTailRecords)
	}

	p3 := transport.StreamID{Topic: "src", Partition: 3}
	d.mu.Lock()
	d.holding(p3, 110, 149) // by the member that had it meanwhile
	d.mu.Unlock()
	for pos := uint64(150); pos <= 159; pos++ {
		given[p3] = append(given[p3], pos)
	}
	src.events <- *startEv(p3, 120)
	for pos := uint64(120); pos <= 159; pos++ {
		src.events <- *msg(p3, pos)
	}
	waitAcked(t, src, p3, 159)
	cancel()
	if err := waitRun(t, done); err != nil {
		t.Fatal(err)
	}
	times := timesHeld(d)
	for p := range int32(parts) {
		s := transport.StreamID{Topic: "src", Partition: p}
		last := uint64(109)
		if s == p3 {
			last = 159
		}
		for pos := uint64(0); pos <= last; pos++ {
			if times[s][pos] != 1 {
				t.Errorf("%s %d is in the destination %d times", s, pos, times[s][pos])
			}
		}
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if len(src.errs) > 0 {
		t.Errorf("acknowledgements: %v", src.errs)
	}
}

// TestUnread: how much of the destination a stream start reads again,
// from each destination stream's last record against what was read of
// it; and a read that does not reach back to what was read before (more
// written between the two reads) is not taken.
func TestUnread(t *testing.T) {
	dA, dB := transport.StreamID{Topic: "dest"}, transport.StreamID{Topic: "dest", Partition: 1}
	last := func(s transport.StreamID, seq uint64) transport.Message {
		return transport.Message{Stream: s, Seq: seq}
	}
	for _, tc := range []struct {
		name string
		last []transport.Message
		want int
	}{
		{"nothing written", []transport.Message{last(dA, 99), last(dB, 49)}, 0},
		{"holds nothing now (made again)", nil, DefaultTailRecords},
		{"a stream holds nothing now", []transport.Message{last(dA, 99)}, DefaultTailRecords},
		{"one stream grew by 5", []transport.Message{last(dA, 104), last(dB, 49)}, 6},
		{"both grew", []transport.Message{last(dA, 101), last(dB, 59)}, 11},
		{"a stream not read before", []transport.Message{last(dA, 99), last(dB, 49), last(transport.StreamID{Topic: "dest", Partition: 2}, 6)}, 8},
		{"grew by a tail less 2", []transport.Message{last(dA, 99+DefaultTailRecords-2), last(dB, 49)}, DefaultTailRecords - 1},
		{"grew by a tail less 1: a full read", []transport.Message{last(dA, 99+DefaultTailRecords-1), last(dB, 49)}, DefaultTailRecords},
		{"grew by a tail", []transport.Message{last(dA, 99+DefaultTailRecords)}, DefaultTailRecords},
		{"ends before what was read", []transport.Message{last(dA, 10)}, DefaultTailRecords},
	} {
		c := newCore(t, 0)
		if _, err := c.ResumeAcknowledged(append(tailOf(dA, part0, 0, 99), shifted(0, tailOf(dB, part1, 0, 49))...)); err != nil {
			t.Fatal(err)
		}
		if got := c.Unread(tc.last); got != tc.want {
			t.Errorf("%s: Unread = %d, want %d", tc.name, got, tc.want)
		}
	}

	if n := newCore(t, 0).Unread(nil); n != 0 {
		t.Errorf("Unread of a destination empty when read and now = %d, want 0", n)
	}
	c := newCore(t, 0)
	if _, err := c.ResumeAcknowledged(tailOf(dA, part0, 0, 99)); err != nil {
		t.Fatal(err)
	}
	if n := c.Unread([]transport.Message{last(dA, 104)}); n != 6 {
		t.Fatalf("Unread = %d, want 6", n)
	}
	// 20 more were written before the read of 6: its 6 are all new.
	if ok, err := c.RereadSince(part0, shifted(119, tailOf(dA, part0, 120, 125)), 6); ok || err != nil {
		t.Errorf("RereadSince of records none of which was read before = %v, %v: want not taken", ok, err)
	}
	if !c.NeedsReread(startEv(part0, 100)) {
		t.Errorf("a read not taken counts as the start's")
	}
	if ok, err := c.RereadSince(part0, shifted(99, tailOf(dA, part0, 99, 104)), 6); !ok || err != nil {
		t.Errorf("RereadSince reaching back to a record read = %v, %v: want taken", ok, err)
	}
	if c.NeedsReread(startEv(part0, 100)) || c.Unread([]transport.Message{last(dA, 104)}) != 0 {
		t.Errorf("after RereadSince: want the start read for, and nothing unread")
	}
}
