package pipe

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// tailWithout is tailOf(dest, src, from, to) without the records of
// the positions missing: writes the destination refused while later
// ones, already in flight, were accepted.
func tailWithout(dest, src transport.StreamID, from, to uint64, missing ...uint64) []transport.Message {
	var tail []transport.Message
	for _, m := range tailOf(dest, src, from, to) {
		if o, _, _ := transport.ParseOrigin(m.Headers); !slices.Contains(missing, o.Seq) {
			m.Seq = uint64(len(tail))
			tail = append(tail, m)
		}
	}
	return tail
}

// TestResumeWritesWhatTheDestinationRefused: a position missing
// between positions the destination's tail holds (a write refused while
// the ones after it were accepted) is not taken as held: the source,
// giving it again, has it written (and a destination that refuses it
// for good stops the pipe again, as package documentation promises),
// instead of dropped and acknowledged.
func TestResumeWritesWhatTheDestinationRefused(t *testing.T) {
	for _, acked := range []bool{false, true} {
		c := newCore(t, 0)
		src, resume := feedA, c.Resume
		if acked {
			src, resume = srcLog, c.ResumeAcknowledged
		}
		if _, err := resume(tailWithout(part0, src, 1, 10, 6)); err != nil {
			t.Fatal(err)
		}
		evs := []*transport.Event{startEv(src, 6)}
		for s := uint64(6); s <= 11; s++ {
			evs = append(evs, msg(src, s))
		}
		tk, ws := feed(t, c, evs...)
		if len(ws) != 2 || ws[0].marker || ws[0].origin.Seq != 6 || ws[1].origin.Seq != 11 {
			t.Fatalf("acknowledged %v: wrote %+v, want 6 and 11", acked, ws)
		}
		if got := acks(c); len(got) != 0 {
			t.Errorf("acknowledged %v: acks %v before 6 was accepted", acked, got)
		}
		if err := c.Done(tk[0]); err != nil {
			t.Fatal(err)
		}
		if got := acks(c); !slices.Equal(got, []Ack{{src, 10}}) {
			t.Errorf("acknowledged %v: acks %v, want up to 10", acked, got)
		}
	}
}

// TestPipeRestartAfterRefusal: a pipe stopped by a write its
// destination refused, while it accepted those after it, is restarted;
// the refused message, delivered again, is written and only then
// acknowledged.
func TestPipeRestartAfterRefusal(t *testing.T) {
	d := &dest{failAt: 6}
	given := map[transport.StreamID][]uint64{srcLog: {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}
	src := newAckingSource(16, d.holds(given))
	for s := uint64(1); s <= 10; s++ {
		src.events <- *msg(srcLog, s)
	}
	p, _ := New(src, d, Config{})
	err := runUntilFailed(t, p, d)
	if !strings.Contains(err.Error(), "write 6 refused") {
		t.Fatalf("Run: %v", err)
	}

	// Restarted: the source delivers again what was not acknowledged.
	src2 := newAckingSource(16, d.holds(given))
	for s := src.ackedAt(srcLog) + 1; s <= 10; s++ {
		src2.events <- *msg(srcLog, s)
	}
	p, _ = New(src2, d, Config{})
	tail, _ := d.Tail(context.Background(), DefaultTailRecords)
	if _, err := p.Resume(tail); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := runPipe(ctx, p)
	deadline := time.After(waitLimit)
	for src2.ackedAt(srcLog) < 10 {
		d.accept(-1)
		select {
		case <-src2.changed:
		case <-deadline:
			t.Fatalf("acknowledged up to %d, want 10", src2.ackedAt(srcLog))
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	if err := waitRun(t, done); err != nil {
		t.Fatal(err)
	}
	src2.mu.Lock()
	defer src2.mu.Unlock()
	if len(src2.errs) > 0 {
		t.Errorf("acknowledgements: %v", src2.errs)
	}
}

// TestResumeGapIntoHole: a Gap the source reports over a position
// missing between those the destination holds is written from that
// position on, not dropped nor over what the destination holds.
func TestResumeGapIntoHole(t *testing.T) {
	c := newCore(t, 0)
	if _, err := c.Resume(tailWithout(part0, feedA, 1, 10, 6, 7)); err != nil {
		t.Fatal(err)
	}
	_, ws := feed(t, c, gapEv(feedA, 4, 6, transport.GapTimeout), msg(feedA, 7), msg(feedA, 8))
	want := transport.Gap{Stream: feedA, From: 6, To: 6, Reason: transport.GapTimeout}
	if len(ws) != 2 || !ws[0].marker || ws[0].gap != want || ws[1].origin.Seq != 7 {
		t.Fatalf("wrote %+v, want a marker of 6 and message 7", ws)
	}
}

func TestRunsOf(t *testing.T) {
	for _, tc := range []struct {
		spans, want []run
	}{
		{nil, nil},
		{[]run{{1, 1}, {2, 2}, {3, 3}}, []run{{1, 3}}},
		{[]run{{9, 9}, {1, 1}, {4, 7}}, []run{{1, 1}, {4, 7}, {9, 9}}},
		{[]run{{1, 10}, {3, 3}, {12, 12}}, []run{{1, 10}, {12, 12}}},
		{[]run{{5, 5}, {5, 5}, {7, 7}}, []run{{5, 5}, {7, 7}}},
		{[]run{{1, 1<<64 - 1}, {3, 3}}, []run{{1, 1<<64 - 1}}},
	} {
		if got := runsOf(tc.spans); !slices.Equal(got, tc.want) {
			t.Errorf("runsOf(%v) = %v, want %v", tc.spans, got, tc.want)
		}
	}
	r := &resume{last: 10, held: []run{{1, 1}, {4, 7}, {9, 10}}}
	for pos, held := range map[uint64]bool{0: false, 1: true, 2: false, 3: false, 4: true, 8: false, 9: true, 10: true, 11: false} {
		if r.holds(pos) != held {
			t.Errorf("holds(%d) = %v", pos, !held)
		}
	}
	for pos, first := range map[uint64]uint64{0: 0, 1: 2, 2: 2, 3: 3, 4: 8, 9: 11, 12: 12} {
		if got := r.firstMissing(pos); got != first {
			t.Errorf("firstMissing(%d) = %d, want %d", pos, got, first)
		}
	}
}

// runUntilFailed runs p, its destination d accepting everything, until
// Run fails (a write d refuses), and returns that error.
func runUntilFailed(t *testing.T, p *Pipe, d *dest) error {
	t.Helper()
	done := runPipe(context.Background(), p)
	deadline := time.After(waitLimit)
	for {
		d.accept(-1)
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("Run returned nil, want the refusal")
			}
			return err
		case <-deadline:
			t.Fatal("Run did not fail")
		case <-time.After(time.Millisecond): // polling a fake with no event to wait on
		}
	}
}
