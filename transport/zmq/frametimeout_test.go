package zmq

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/brokerless/brokerless/transport"
)

// TestFrameTimeoutNotOurSilence: a subscriber whose application pauses
// for longer than FrameTimeout, its receive queue full, does not fail
// its publisher's connection: the header of a large frame the reader
// read ahead of the message it waits to queue is not the publisher's
// slowness. Every message arrives, in order, without a gap.
func TestFrameTimeoutNotOurSilence(t *testing.T) {
	const ft = 300 * time.Millisecond
	pub, ep := bound(t, Config{Heartbeat: 100 * time.Millisecond})
	sub := connected(t, ep, Config{ReceiveQueue: 1, FrameTimeout: ft, MaxMessageBytes: 1 << 20})
	ctx := testCtx(t)
	if err := pub.WaitSubscribers(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	const n = 8
	payload := bytes.Repeat([]byte("p"), 200<<10) // a frame over 64 KiB
	for range n {
		if err := pub.Publish(ctx, transport.Message{Topic: "t", Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * ft) // the application pausing: what this test is about
	var seqs []uint64
	for len(seqs) < n {
		ev := receive(t, sub)
		switch ev.Kind {
		case transport.EventMessage:
			seqs = append(seqs, ev.Message.Seq)
		case transport.EventGap:
			t.Fatalf("gap %+v after %v", ev.Gap, seqs)
		}
	}
	if st := sub.Stats(); st.FrameTimeouts != 0 || st.Dialed != 1 {
		t.Errorf("FrameTimeouts %d, Dialed %d: want 0 and 1 (the publisher's connection failed while we were not reading)", st.FrameTimeouts, st.Dialed)
	}
}

// TestFrameTimeoutTrickle: the time a large frame's body may take is
// the sum of the reader's waits for it, however many reads bring it: a
// peer sending it a byte at a time is closed after FrameTimeout.
func TestFrameTimeoutTrickle(t *testing.T) {
	const ft = 300 * time.Millisecond
	sub, err := NewSubscriber(t.Context(), Config{Bind: []string{"tcp://127.0.0.1:0"}, FrameTimeout: ft})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	c, _ := rawPeer(t, "tcp://"+sub.Addrs()[0].String(), zmq4.Pub)
	if _, err := c.Write(binary.BigEndian.AppendUint64([]byte{flagLong}, 100<<10)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for time.Since(start) < 10*ft {
		if _, err := c.Write([]byte("x")); err != nil {
			break // closed
		}
		time.Sleep(ft / 10) // the peer's slowness: what this test is about
	}
	waitCount(t, "FrameTimeouts", func() uint64 { return sub.Stats().FrameTimeouts }, 1)
	if d := time.Since(start); d > 8*ft {
		t.Errorf("a frame body trickling in was cut after %v, FrameTimeout %v", d.Round(time.Millisecond), ft)
	}
}

// TestUnfinishedMessageTimesOut: a message over 64 KiB made of small
// frames must arrive whole within FrameTimeout, as one large frame
// must: zmq4 holds every frame of a message until its last, so a peer
// that sent most of one (MaxMessageBytes, per connection) and then
// nothing used to have it held for as long as it kept the connection.
func TestUnfinishedMessageTimesOut(t *testing.T) {
	const ft = 300 * time.Millisecond
	sub, err := NewSubscriber(t.Context(), Config{Bind: []string{"tcp://127.0.0.1:0"}, FrameTimeout: ft})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ep := "tcp://" + sub.Addrs()[0].String()
	c, _ := rawPeer(t, ep, zmq4.Pub)
	frame := append([]byte{flagMore, 255}, bytes.Repeat([]byte("f"), 255)...)
	if _, err := c.Write(bytes.Repeat(frame, 400)); err != nil { // 100 KiB, unfinished
		t.Fatal(err)
	}
	start := time.Now()
	if !closedSoon(c) {
		t.Fatalf("a message of 100 KiB left unfinished: connection still open after %v (FrameTimeout %v)", time.Since(start).Round(time.Millisecond), ft)
	}
	waitCount(t, "FrameTimeouts", func() uint64 { return sub.Stats().FrameTimeouts }, 1)

	// A whole one of small frames, sent at once, is received.
	pc, zc := rawPeer(t, ep, zmq4.Pub)
	defer pc.Close()
	frames := [][]byte{[]byte("t")}
	for range 400 {
		frames = append(frames, bytes.Repeat([]byte("f"), 255))
	}
	if err := zc.SendMsg(zmq4.NewMsgFrom(frames...)); err != nil {
		t.Fatal(err)
	}
	if m := nextMessage(t, sub); len(m.Headers) != 399 {
		t.Errorf("got a message of %d header frames, want 399", len(m.Headers))
	}
}

// TestReadAheadWaitsNotForRoom: a message whole in the reader's buffer
// is handed on at once, though the large frame after it must wait for
// room in MaxPendingBytes (held by another connection): the reader
// waited for that room before handing zmq4 the bytes it had checked,
// so the message came up to FrameTimeout late (and the handshake, when
// the frame followed the READY, took that long too).
func TestReadAheadWaitsNotForRoom(t *testing.T) {
	const maxMsg, ft = 1 << 20, 3 * time.Second
	sub, err := NewSubscriber(t.Context(), Config{Bind: []string{"tcp://127.0.0.1:0"}, MaxMessageBytes: maxMsg,
		MaxPendingBytes: maxMsg, FrameTimeout: ft})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ep := "tcp://" + sub.Addrs()[0].String()
	hog, _ := rawPeer(t, ep, zmq4.Pub)
	if _, err := hog.Write(append(binary.BigEndian.AppendUint64([]byte{flagLong}, maxMsg-1), 'x')); err != nil {
		t.Fatal(err)
	}
	waitCount(t, "budget taken", func() uint64 { return uint64(maxMsg - sub.sock.pending.available()) }, maxMsg-1)
	c, _ := rawPeer(t, ep, zmq4.Pub)
	msg := []byte{flagMore, 1, 't', 0, 5, 'h', 'e', 'l', 'l', 'o'}
	msg = append(msg, binary.BigEndian.AppendUint64([]byte{flagLong}, 512<<10)...)
	start := time.Now()
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	m := nextMessage(t, sub)
	if d := time.Since(start); string(m.Payload) != "hello" || d > ft/3 {
		t.Errorf("got %q after %v (FrameTimeout %v): want hello at once", m.Payload, d.Round(time.Millisecond), ft)
	}
}
