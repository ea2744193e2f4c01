package multicast

import (
	"context"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// waitEndRecorded waits until the archive's last record is the end
// marker of a session other than not (the recorder wrote its
// publisher's close), and returns that session.
func waitEndRecorded(t *testing.T, raw string, not transport.StreamID) transport.StreamID {
	t.Helper()
	var end transport.StreamEnd
	waitLastRecord(t, raw, "an end marker", func(m transport.Message) bool {
		e, ok, _ := transport.ParseEndMarker(m)
		end = e
		return ok && e.Stream != not
	})
	if end.Reason != transport.EndClosed {
		t.Fatalf("end marker %+v: want the publisher's close", end)
	}
	return end.Stream
}

// TestArchiveEndMarker: a publisher closes its session cleanly, a
// second session follows and closes too, and a recorder archives both,
// with an end marker for each close. A subscriber that joins later with
// join=earliest, the live feed silent, replays both from the archive:
// every message once, no Gap (no open one at the boundary: the archive
// says where the first session ended, so the replay does not wait for
// the live feed to say it, ArchiveConfig.Wait, and then guess), and each
// session's StreamEnd with its publisher's reason and last sequence
// number.
func TestArchiveEndMarker(t *testing.T) {
	const n = 500
	cfg := testConfig(t)
	addr := startLogd(t)
	raw := startRecorder(t, cfg, addr, "ends")
	p1 := mustPub(t, cfg)
	publishAt(t, p1, 0, n, 64, 20_000)
	if err := p1.Close(); err != nil {
		t.Fatal(err)
	}
	first := waitEndRecorded(t, raw, transport.StreamID{})
	p2 := mustPub(t, cfg)
	publishAt(t, p2, n, n, 64, 20_000)
	if err := p2.Close(); err != nil {
		t.Fatal(err)
	}
	second := waitEndRecorded(t, raw, first)

	scfg := cfg
	scfg.Archive.URL, scfg.Archive.Join = raw, JoinEarliest()
	s := mustSub(t, scfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a deadlock detector
	defer cancel()
	var (
		ends []transport.StreamEnd
		next int // the index of the message expected next
	)
	for len(ends) < 2 {
		ev, err := s.Receive(ctx)
		if err != nil {
			t.Fatalf("after message %d and ends %+v: %v; stats %+v", next-1, ends, err, s.Stats().Archive)
		}
		switch ev.Kind {
		case transport.EventMessage:
			if i := indexOf(ev.Message.Payload); i != next {
				t.Fatalf("message %d, want %d", i, next)
			}
			want := first
			if next >= n {
				want = second
			}
			if ev.Message.Stream != want || ev.Message.Seq != uint64(next%n+1) {
				t.Fatalf("message %d at %v seq %d, want %v seq %d", next, ev.Message.Stream, ev.Message.Seq, want, next%n+1)
			}
			next++
		case transport.EventGap:
			t.Fatalf("after message %d: %v; stats %+v", next-1, ev.Gap, s.Stats().Archive)
		case transport.EventStreamEnd:
			ends = append(ends, ev.End)
		}
	}
	want := []transport.StreamEnd{
		{Stream: first, LastSeq: n, Reason: transport.EndClosed},
		{Stream: second, LastSeq: n, Reason: transport.EndClosed},
	}
	if next != 2*n || ends[0] != want[0] || ends[1] != want[1] {
		t.Fatalf("%d messages, ends %+v: want %d, %+v", next, ends, 2*n, want)
	}
	if st := s.Stats().Archive; st.OpenGaps != 0 || st.Ends != 2 || st.FromArchive != 2*n {
		t.Fatalf("stats %+v: want both sessions from the archive, ended by its end markers", st)
	}
}

// TestArchiveEndMarkerAfterIdleEnd: the subscriber's engine had every
// message of a session but not its publisher's close, and ended it for
// silence (EndIdle), which the archive may stand in for: the replay
// looks for the session's tail from the position after its last
// message. The recorder heard the close; its end marker, at the
// session's last position, is the first record the replay must read,
// and the session ends with the publisher's reason — not EndIdle after
// the next session's records, or after Wait when there are none.
func TestArchiveEndMarkerAfterIdleEnd(t *testing.T) {
	log := &memLog{batch: 100}
	log.add(cat(msgs(sA, 1, 10), endEv(sA, 10, transport.EndClosed), msgs(sB, 1, 3))...)
	a := archiveSideOn(t, log, time.Minute) // a replay that waits for Wait fails the test's deadline
	got := feedLive(a, cat(startEv(sA, transport.StreamID{}, 1), msgs(sA, 1, 10), endEv(sA, 10, transport.EndIdle))...)
	got = append(got, replayAll(t, a)...)
	var ends []transport.StreamEnd
	for _, ev := range got {
		if ev.Kind == transport.EventStreamEnd {
			ends = append(ends, ev.End)
		}
	}
	want := transport.StreamEnd{Stream: sA, LastSeq: 10, Reason: transport.EndClosed}
	if len(ends) != 1 || ends[0] != want {
		t.Fatalf("ends %+v in %s, want %+v", ends, show(got), want)
	}
	if st := a.stats(); st.Ends != 1 || st.GaveUp != 0 || st.OpenGaps != 0 {
		t.Errorf("stats %+v: want the session ended by the archive's end marker", st)
	}
}
