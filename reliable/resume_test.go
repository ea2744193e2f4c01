package reliable

import (
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// An outage longer than IdleTimeout (a partition, a subscriber stopped
// for a few seconds) ends the stream; when the publisher, alive the
// whole time, is heard again, its stream resumes where the receiver
// left it and what it missed is reported as a Gap. A replay of what
// the session sent before it ended, or its data from another address,
// does not bring it back.
func TestIdleEndedStreamResumesWhenPublisherHeardAgain(t *testing.T) {
	r, id, from, h := listeningReceiver(t)
	now := simEpoch
	seq := uint64(1)
	send := func() {
		_ = r.HandleDatagram(now, from, dataFrame(id, seq, 1, []byte("x")), h)
		seq++
		r.Poll(now, h)
	}
	for i := 0; i < 10; i++ {
		send()
		now = now.Add(time.Millisecond)
	}
	// 6 s partition: the publisher goes on, nothing arrives.
	now = now.Add(6 * time.Second)
	seq += 6000
	r.Poll(now, h)
	if n := len(r.streams); n != 0 {
		t.Fatalf("%d streams after IdleTimeout", n)
	}
	// A replay of an old datagram, and the session's data from another
	// address, are stale: the stream is not started again.
	_ = r.HandleDatagram(now, from, dataFrame(id, 10, 1, []byte("old")), h)
	_ = r.HandleDatagram(now, mustAddrPort("10.6.6.6:5000"), dataFrame(id, seq+100, 1, []byte("forged")), h)
	if st := r.Stats(); st.Stale != 2 || len(r.streams) != 0 || st.Resumed != 0 {
		t.Fatalf("old or foreign datagrams of the ended session: stats %+v, streams %d", st, len(r.streams))
	}
	before := len(h.msgs)
	resumedAt := seq
	for i := 0; i < 3000; i++ { // the partition heals: 3 s more
		send()
		now = now.Add(time.Millisecond)
	}
	st := r.Stats()
	if got := len(h.msgs) - before; got != 3000 {
		t.Fatalf("after the outage %d of the live publisher's 3000 messages delivered (stats %+v)", got, st)
	}
	if st.Resumed != 1 {
		t.Fatalf("Resumed %d, want 1", st.Resumed)
	}
	var missed *transport.Gap
	for _, g := range h.gapsOf() {
		if g.From <= 11 && g.To >= resumedAt-1 {
			g := g
			missed = &g
		}
	}
	if missed == nil || missed.From != 11 || missed.To != resumedAt-1 || missed.Reason == 0 {
		t.Fatalf("the outage's messages 11..%d are not reported as one Gap: %+v", resumedAt-1, h.gapsOf())
	}
	var starts, ends int
	for _, e := range h.evs {
		switch e.Kind {
		case transport.EventStreamStart:
			starts++
		case transport.EventStreamEnd:
			ends++
		}
	}
	if starts != 2 || ends != 1 {
		t.Fatalf("%d StreamStart and %d StreamEnd, want 2 and 1", starts, ends)
	}
}

// A session that ended with an END stays ended: its late datagrams are
// stale.
func TestClosedStreamDoesNotResume(t *testing.T) {
	r, id, from, h := listeningReceiver(t)
	now := simEpoch
	_ = r.HandleDatagram(now, from, dataFrame(id, 1, 1, []byte("x")), h)
	_ = r.HandleDatagram(now, from, AppendBeat(nil, TypeEnd, id, Beat{Next: 2, Low: 1}), h)
	now = now.Add(time.Second)
	r.Poll(now, h)
	if len(r.streams) != 0 {
		t.Fatal("END did not end the stream")
	}
	_ = r.HandleDatagram(now, from, dataFrame(id, 2, 1, []byte("late")), h)
	if st := r.Stats(); st.Stale != 1 || st.Resumed != 0 || len(h.msgs) != 1 {
		t.Fatalf("data after the END: stats %+v, %d messages", st, len(h.msgs))
	}
}
