package pipe

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// backDest is the fake destination as a transport.BackReader, counting
// the pages read.
type backDest struct {
	*dest
	pages atomic.Int64
}

func (b *backDest) Before(_ context.Context, _ transport.StreamID, pos uint64, n int) ([]transport.Message, error) {
	b.pages.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	end := min(pos, uint64(len(b.held)))
	return slices.Clone(b.held[max(0, int(end)-n):end]), nil
}

// holding appends to d what a pipe writes of src's positions from to to.
func (d *dest) holding(src transport.StreamID, from, to uint64) {
	for s := from; s <= to; s++ {
		d.held = append(d.held, transport.Message{Stream: transport.StreamID{Topic: "dest"}, Seq: uint64(len(d.held)),
			Headers: transport.AppendOrigin(nil, transport.Origin{Stream: src, Seq: s, Time: t0})})
	}
}

// TestPipeLooksBackForAStreamBeyondTheTail: a pipe from a consumer
// group, killed and restarted, whose destination's last
// DefaultTailRecords records hold only partition 0 (partition 1 was
// assigned elsewhere for a while, or fetched later), is given partition
// 1 again from its start (its group had not committed). It reads the
// destination further back, finds what it wrote of partition 1, and
// drops it: every position is in the destination once. Without
// Config.Back (or with the lookup undone) positions 0..99 of partition 1
// are written twice.
func TestPipeLooksBackForAStreamBeyondTheTail(t *testing.T) {
	srcP0 := transport.StreamID{Topic: "src", Partition: 0}
	srcP1 := transport.StreamID{Topic: "src", Partition: 1}
	d := &dest{}
	d.holding(srcP1, 0, 99)
	d.holding(srcP0, 0, 4999)
	before := len(d.held)
	back := &backDest{dest: d}

	given := map[transport.StreamID][]uint64{}
	src := newAckingSource(400, d.holds(given))
	for s := uint64(4990); s <= 5009; s++ {
		src.events <- *msg(srcP0, s)
		given[srcP0] = append(given[srcP0], s)
	}
	for s := uint64(0); s <= 149; s++ {
		src.events <- *msg(srcP1, s)
		given[srcP1] = append(given[srcP1], s)
	}
	p, err := New(src, d, Config{Back: back})
	if err != nil {
		t.Fatal(err)
	}
	tail, _ := d.Tail(context.Background(), DefaultTailRecords)
	if n, err := p.Resume(tail); n != 1 || err != nil {
		t.Fatalf("resume: %d streams, %v (the tail holds partition 0 alone)", n, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := runPipe(ctx, p)
	stop := make(chan struct{})
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		tick := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case tick <- struct{}{}:
				}
			}
		}()
		d.shuffle(rand.New(rand.NewPCG(5, 6)), stop, tick)
	}()
	waitAcked(t, src, srcP0, 5009)
	waitAcked(t, src, srcP1, 149)
	close(stop)
	<-accepted
	cancel()
	if err := waitRun(t, done); err != nil {
		t.Fatal(err)
	}
	times := map[transport.StreamID]map[uint64]int{srcP0: {}, srcP1: {}}
	for i := range d.held {
		o, ok, err := transport.ParseOrigin(d.held[i].Headers)
		if !ok || err != nil {
			t.Fatalf("record %d: no origin", i)
		}
		times[o.Stream][o.Seq]++
	}
	for _, s := range []transport.StreamID{srcP0, srcP1} {
		for _, pos := range given[s] {
			if times[s][pos] != 1 {
				t.Errorf("%s %d is in the destination %d times", s, pos, times[s][pos])
			}
		}
	}
	st := p.Stats()
	if want := uint64(before - DefaultTailRecords); st.LookedBack != want || st.FoundBack != 1 || back.pages.Load() != 1 {
		t.Errorf("looked back at %d records in %d pages, found %d streams; want %d records in 1 page, 1 stream", st.LookedBack, back.pages.Load(), st.FoundBack, want)
	}
	if st.Forwarded != 50+10 || st.Skipped != 100+10 {
		t.Errorf("forwarded %d, skipped %d: want 60 and 110", st.Forwarded, st.Skipped)
	}
}

// shifted is tailOf with the destination positions starting at first.
func shifted(first uint64, tail []transport.Message) []transport.Message {
	for i := range tail {
		tail[i].Seq += first
	}
	return tail
}

// TestLookForBounds: LookFor asks for pages of the destination streams
// whose tail was full only, for a log's stream, not a feed's (which
// would lose what comes while the pipe reads), up to its limit; a stream not found once the
// destination was read to its start is not counted Unresumed, one not
// found within the limit is; a source stream whose positions go back in
// a page is not resumed from an acknowledged source.
func TestLookForBounds(t *testing.T) {
	dst := transport.StreamID{Topic: "dest"}
	srcP1 := transport.StreamID{Topic: "src", Partition: 1}
	full := shifted(5000, tailOf(dst, feedA, 1, DefaultTailRecords))

	c := newCore(t, 0)
	if _, err := c.Resume(full); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := c.LookFor(feedB, 7, 10000); ok {
		t.Errorf("asked to look back for a feed's stream")
	}
	srcP2 := transport.StreamID{Topic: "src", Partition: 2}
	d, before, ok := c.LookFor(srcP2, 7, 10000)
	if !ok || d != dst || before != 5000 {
		t.Fatalf("LookFor: %v %d %v, want %v before 5000", d, before, ok, dst)
	}
	page := shifted(3000, tailOf(dst, srcP2, 10, 2009))
	c.AddPage(dst, page, len(page))
	if _, _, ok := c.LookFor(srcP2, 10, 10000); ok {
		t.Errorf("looks back again for a stream it found back to the event")
	}
	if _, ws := feed(t, c, msg(srcP2, 2009), msg(srcP2, 2010)); len(ws) != 1 || ws[0].origin.Seq != 2010 {
		t.Errorf("wrote %+v, want 2010 alone (the page held up to 2009)", ws)
	}
	if _, _, ok := c.LookFor(srcP1, 0, 2000); ok {
		t.Errorf("looks back past its limit")
	}
	feed(t, c, msg(srcP1, 0))
	if s := c.Stats(); s.Unresumed != 1 || s.FoundBack != 1 || s.LookedBack != 2000 {
		t.Errorf("stats %+v: want 1 unresumed (not found within the limit), 1 found in 2000 records", s)
	}

	c = newCore(t, 0)
	if _, err := c.Resume(full); err != nil {
		t.Fatal(err)
	}
	c.AddPage(dst, shifted(4990, tailOf(dst, feedA, 1, 10)), LookbackPage) // fewer than asked: the start
	if _, _, ok := c.LookFor(srcP1, 0, 10000); ok {
		t.Errorf("looks back past the destination's start")
	}
	feed(t, c, msg(srcP1, 0))
	if s := c.Stats(); s.Unresumed != 0 {
		t.Errorf("stats %+v: the destination was read whole, nothing unresumed", s)
	}

	c = newCore(t, 0)
	if _, err := c.ResumeAcknowledged(shifted(5000, tailOf(dst, part0, 1, DefaultTailRecords))); err != nil {
		t.Fatal(err)
	}
	mixed := append(shifted(100, tailOf(dst, srcP1, 50, 60)), shifted(111, tailOf(dst, srcP1, 30, 40))...)
	c.AddPage(dst, mixed, LookbackPage)
	if _, ws := feed(t, c, msg(srcP1, 35)); len(ws) != 1 {
		t.Errorf("an interleaved stream found in a page: wrote %+v, want 35 written again", ws)
	}
	if s := c.Stats(); s.Interleaved != 1 || s.FoundBack != 0 {
		t.Errorf("stats %+v: want 1 interleaved", s)
	}
}

// TestLookForSkipsInterleavedInTail: an acknowledged source's stream
// whose positions go backwards in a full tail (two clusters' src/2 in
// one destination) is not resumed, and counted Interleaved, by
// ResumeAcknowledged: it is not looked for further back either, where
// an older run of the other cluster's positions (in order) would resume
// it and drop this cluster's messages below them.
func TestLookForSkipsInterleavedInTail(t *testing.T) {
	dst := transport.StreamID{Topic: "dest"}
	tail := append(interleavedTail(dst), tailOf(dst, part0, 1, DefaultTailRecords-20)...)
	for i := range tail {
		tail[i].Seq = 5000 + uint64(i)
	}
	c := newCore(t, 0)
	if _, err := c.ResumeAcknowledged(tail); err != nil {
		t.Fatal(err)
	}
	if d, before, ok := c.LookFor(srcLog, 5, DefaultMaxLookback); ok {
		// What the pipe would read there: the other cluster's 400..899.
		c.AddPage(d, shifted(before-500, tailOf(dst, srcLog, 400, 899)), 500)
	}
	if _, ws := feed(t, c, msg(srcLog, 5), msg(srcLog, 30)); len(ws) != 2 {
		t.Errorf("wrote %+v, want 5 and 30: the stream is not resumed", ws)
	}
	if s := c.Stats(); s.Interleaved != 1 || s.FoundBack != 0 {
		t.Errorf("stats %+v: want 1 interleaved, none found further back", s)
	}
}

// TestLookBackInterleavedForAFoundStream: an acknowledged source's
// stream found in the tail, looked for further back (its first event is
// older than the tail's oldest of it), whose positions go backwards in
// the page (written by two pipes: two clusters' src/2) is not resumed,
// and counted, as one found so in the tail is: the other's positions
// would drop this source's.
func TestLookBackInterleavedForAFoundStream(t *testing.T) {
	dst := transport.StreamID{Topic: "dest"}
	c := newCore(t, 0)
	if _, err := c.ResumeAcknowledged(shifted(5000, tailOf(dst, srcLog, 2001, 2000+DefaultTailRecords))); err != nil {
		t.Fatal(err)
	}
	d, before, ok := c.LookFor(srcLog, 150, DefaultMaxLookback)
	if !ok {
		t.Fatal("does not look back")
	}
	mixed := append(tailOf(dst, srcLog, 400, 600), tailOf(dst, srcLog, 100, 300)...)
	for i := range mixed {
		mixed[i].Seq = before - uint64(len(mixed)) + uint64(i)
	}
	c.AddPage(d, mixed, LookbackPage)
	if _, ws := feed(t, c, msg(srcLog, 150), msg(srcLog, 2500)); len(ws) != 2 {
		t.Errorf("wrote %+v, want 150 and 2500: the stream is not resumed", ws)
	}
	if s := c.Stats(); s.Interleaved != 1 {
		t.Errorf("stats %+v: want 1 interleaved", s)
	}

	// A page, older than the tail, that reaches positions the tail
	// holds of the stream: the same.
	c = newCore(t, 0)
	if _, err := c.ResumeAcknowledged(shifted(5000, tailOf(dst, srcLog, 2001, 2000+DefaultTailRecords))); err != nil {
		t.Fatal(err)
	}
	c.AddPage(dst, shifted(5000-201, tailOf(dst, srcLog, 1900, 2100)), LookbackPage)
	if _, ws := feed(t, c, msg(srcLog, 1950)); len(ws) != 1 {
		t.Errorf("wrote %+v, want 1950: the stream is not resumed", ws)
	}
	if s := c.Stats(); s.Interleaved != 1 {
		t.Errorf("stats %+v: want 1 interleaved", s)
	}
}
