package zmq

import (
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestWorkerStaleAckAfterReconnect: task 7 was delivered on a
// connection that dropped; the balancer, on the new connection, sent
// task 9 and then 7 again. The application's Ack of its first 7 (from
// the dropped connection) must not say done, cumulatively, for 9 and the
// new 7, which it has not finished: that Ack is of a task the balancer
// already handed again, and says nothing. Its Ack of the second 7 says
// both done.
func TestWorkerStaleAckAfterReconnect(t *testing.T) {
	w := &Worker{q: newInq(10, 1<<20), closed: make(chan struct{}), pending: map[transport.StreamID][]held{},
		owed: map[*peer]int{}, cfg: Config{Credit: 2}, sock: newSocket(socketConfig{})}
	a := &peer{out: newOutq(10, 1<<20), closing: make(chan struct{})}
	b := &peer{out: newOutq(10, 1<<20), closing: make(chan struct{})}
	task := func(seq uint64) [][]byte {
		return [][]byte{[]byte("t"), appendHeader(nil, &header{kind: kindMessage, feed: 1, session: 2, seq: seq}), []byte("x")}
	}
	if err := w.received(a, task(7)); err != nil {
		t.Fatal(err)
	}
	first := nextMessage(t, w)
	close(a.closing) // the connection dropped
	a.out.close()
	w.detach(a)
	for _, seq := range []uint64{9, 7} {
		if err := w.received(b, task(seq)); err != nil {
			t.Fatal(err)
		}
		if m := nextMessage(t, w); m.Seq != seq {
			t.Fatalf("got task %d, want %d", m.Seq, seq)
		}
	}
	ctx := testCtx(t)
	if err := w.Ack(ctx, first.Stream, first.Seq); err != nil {
		t.Fatal(err)
	}
	if sent := b.out.take(nil); len(sent) != 0 {
		t.Fatalf("the Ack of 7 from the dropped connection said %d tasks of the new one done", len(sent))
	}
	if err := w.Ack(ctx, first.Stream, 7); err != nil {
		t.Fatal(err)
	}
	var done []uint64
	for _, m := range b.out.take(nil) {
		h, err := parseHeader(m.frames[1], nil)
		if err != nil || string(m.frames[0]) != "done" {
			t.Fatalf("worker sent %q (%v), want done", m.frames, err)
		}
		done = append(done, h.seq)
	}
	if len(done) != 2 || done[0] != 9 || done[1] != 7 {
		t.Fatalf("the Ack of the second 7 said %v done, want [9 7]", done)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) != 0 || w.owed[b] != 0 {
		t.Fatalf("left pending %v, owed %d", w.pending, w.owed[b])
	}
}

// TestWorkerForgetsStaleBeyondBound: the tasks delivered on connections
// that dropped and never acknowledged are kept up to MaxCredit, the
// newest; the older are forgotten and counted.
func TestWorkerForgetsStaleBeyondBound(t *testing.T) {
	w := &Worker{q: newInq(10, 1<<20), closed: make(chan struct{}), pending: map[transport.StreamID][]held{},
		owed: map[*peer]int{}, cfg: Config{Credit: MaxCredit}, sock: newSocket(socketConfig{})}
	seq := uint64(0)
	for range 2 {
		p := &peer{out: newOutq(10, 1<<20), closing: make(chan struct{})}
		for range 600 {
			seq++
			h := appendHeader(nil, &header{kind: kindMessage, feed: 1, session: 2, seq: seq})
			if err := w.received(p, [][]byte{[]byte("t"), h, nil}); err != nil {
				t.Fatal(err)
			}
			nextMessage(t, w)
		}
		close(p.closing)
		p.out.close()
		w.detach(p)
	}
	w.mu.Lock()
	hs := w.pending[transport.StreamID{Feed: 1, Session: 2}]
	n, oldest := len(w.pending), hs[0].seq
	w.mu.Unlock()
	if n != 1 || len(hs) != MaxCredit || oldest != 1200-MaxCredit+1 {
		t.Fatalf("kept %d streams, %d tasks from %d; want 1, %d from %d", n, len(hs), oldest, MaxCredit, 1200-MaxCredit+1)
	}
	if st := w.Stats(); st.Forgotten != 1200-MaxCredit {
		t.Fatalf("Forgotten %d, want %d", st.Forgotten, 1200-MaxCredit)
	}
}
