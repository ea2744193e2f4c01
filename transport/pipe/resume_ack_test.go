package pipe

import (
	"errors"
	"slices"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// srcLog is a source stream of a log: a consumer group's partition.
var srcLog = transport.StreamID{Topic: "src", Partition: 2}

// TestResumeAcknowledged: a pipe from an acknowledged source (a
// consumer group, which commits every few seconds) restarted after a
// kill is given again what it wrote; what the destination holds is
// dropped and acknowledged, the rest written. The source says where it
// resumes: a stream that comes back past what the destination holds
// gets no resume gap marker (no Unresumed count either).
func TestResumeAcknowledged(t *testing.T) {
	c := newCore(t, 0)
	if n, err := c.ResumeAcknowledged(tailOf(part0, srcLog, 90, 100)); n != 1 || err != nil {
		t.Fatalf("resume: %d streams, %v", n, err)
	}
	evs := []*transport.Event{startEv(srcLog, 95)}
	for s := uint64(95); s <= 102; s++ {
		evs = append(evs, msg(srcLog, s))
	}
	tk, ws := feed(t, c, evs...)
	if len(ws) != 2 || ws[0].origin.Seq != 101 || ws[1].origin.Seq != 102 {
		t.Fatalf("wrote %+v, want 101 and 102", ws)
	}
	if got := acks(c); !slices.Equal(got, []Ack{{srcLog, 100}}) {
		t.Errorf("acks before receipts %v, want what the destination held", got)
	}
	for _, k := range tk {
		if err := c.Done(k); err != nil {
			t.Fatal(err)
		}
	}
	if got := acks(c); !slices.Equal(got, []Ack{{srcLog, 102}}) {
		t.Errorf("acks %v", got)
	}

	c = newCore(t, 0)
	if _, err := c.ResumeAcknowledged(tailOf(part0, srcLog, 90, 100)); err != nil {
		t.Fatal(err)
	}
	if _, ws := feed(t, c, startEv(srcLog, 150), msg(srcLog, 150)); len(ws) != 1 || ws[0].marker || ws[0].origin.Seq != 150 {
		t.Errorf("a stream past what the destination holds wrote %+v, want 150 alone", ws)
	}
	if s := c.Stats(); s.Markers != 0 || s.Unresumed != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestResumeSplitLeavesCore: a Resume that finds a split stream
// changes nothing, so that a pipe from an acknowledged source may go
// on without resuming (at least once) instead of half resumed.
func TestResumeSplitLeavesCore(t *testing.T) {
	c := newCore(t, 0)
	tail := append(tailOf(part0, srcLog, 1, 5), tailOf(part1, srcLog, 6, 9)...)
	if _, err := c.ResumeAcknowledged(tail); !errors.Is(err, ErrSplitStream) {
		t.Fatalf("resume: %v", err)
	}
	if _, ws := feed(t, c, msg(srcLog, 3)); len(ws) != 1 || ws[0].origin.Seq != 3 {
		t.Errorf("after a failed resume wrote %+v, want 3", ws)
	}
}

// TestResumeCountsLogStreamsBeyondTheTail: a log source (no group) is
// read again from its start after a restart, so a log stream that the
// full tail does not reach is written again from its first offset, 0,
// whole, if the pipe wrote it before: it is counted (Stats.Unresumed),
// though it comes back at its first position. A feed's session that
// does is not (it may be new); nor a log stream of an acknowledged
// source (ResumeAcknowledged: its group says where it resumes).
func TestResumeCountsLogStreamsBeyondTheTail(t *testing.T) {
	dst := transport.StreamID{Topic: "dest"}
	tail := tailOf(dst, srcLog, 1, DefaultTailRecords)
	other := transport.StreamID{Topic: "src", Partition: 5}
	for _, c := range []struct {
		name   string
		resume func(*Core, []transport.Message) (int, error)
		want   uint64
	}{
		{"log source", (*Core).Resume, 1},
		{"acknowledged", (*Core).ResumeAcknowledged, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			core := newCore(t, 0)
			if _, err := c.resume(core, tail); err != nil {
				t.Fatal(err)
			}
			feed(t, core, startEv(other, 0), msg(other, 0), startEv(feedA, 1), msg(feedA, 1))
			if s := core.Stats(); s.Unresumed != c.want {
				t.Fatalf("Unresumed %d, want %d", s.Unresumed, c.want)
			}
		})
	}
}

// TestResumeAcknowledgedInterleaved: two pipes copy the partition src/2
// of two clusters into one destination: its positions in the tail go
// backwards. An acknowledged source does not drop what is below the
// other cluster's position (that would lose it): the stream is not
// resumed, and counted. One pipe's stream, in order, still is.
func TestResumeAcknowledgedInterleaved(t *testing.T) {
	tail := append(interleavedTail(part0), tailOf(part0, feedA, 1, 5)...)
	c := newCore(t, 0)
	if _, err := c.ResumeAcknowledged(tail); err != nil {
		t.Fatal(err)
	}
	if _, ws := feed(t, c, msg(srcLog, 30), msg(feedA, 5), msg(feedA, 6)); len(ws) != 2 || ws[0].origin.Seq != 30 || ws[1].origin.Seq != 6 {
		t.Errorf("wrote %+v, want src/2 30 and feedA 6", ws)
	}
	if s := c.Stats(); s.Interleaved != 1 {
		t.Errorf("Interleaved %d, want 1", s.Interleaved)
	}
}

// interleavedTail is srcLog in dest as two pipes of two clusters write
// it in turn: 20 records, positions 1000 on of the other cluster's (far
// ahead) alternating with 11 on of this one's.
func interleavedTail(dest transport.StreamID) []transport.Message {
	var tail []transport.Message
	for i := uint64(0); i < 20; i++ {
		pos := 1000 + i
		if i%2 == 1 {
			pos = 10 + i
		}
		tail = append(tail, tailOf(dest, srcLog, pos, pos)...)
	}
	return tail
}
