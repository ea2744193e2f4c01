package zmq

import (
	"context"
	"net"
	"strconv"
	"testing"
)

// TestHeartbeatInsideMessage: libzmq (4.3) sends a heartbeat PING, or
// the PONG answering ours, at the next frame boundary, inside a
// multi-frame message too (python3-zmq's libzmq, heartbeating every
// 5 ms, put 707 PINGs among the frames of 500 four-frame messages): the
// message is delivered and the PING answered. A command inside a
// message used to fail the connection (ErrBadFrame), losing what the
// publisher sent until it reconnected. Other commands there still do.
func TestHeartbeatInsideMessage(t *testing.T) {
	sub, err := NewSubscriber(context.Background(), Config{Bind: []string{"tcp://127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	addr := sub.sock.addrs()[0].String()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ping := command("PING", []byte{0, 0, 'c', 't', 'x'})
	pong := command("PONG", []byte("ctx"))
	var b []byte
	b = append(b, greeting()...)
	b = append(b, ready("PUB")...)
	b = append(b, flagMore, 1, 't')
	b = append(b, ping...)
	b = append(b, flagMore, 2, 'h', '1')
	b = append(b, pong...)
	b = append(b, 0, 1, 'p')
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	m := nextMessage(t, sub)
	if m.Topic != "t" || string(m.Payload) != "p" {
		t.Errorf("got topic %q payload %q, want t and p", m.Topic, m.Payload)
	}
	if st := sub.Stats(); st.TooLarge != 0 {
		t.Errorf("stats %+v", st)
	}

	// Another command inside a message still fails the connection.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	b = append(append(append(greeting(), ready("PUB")...), flagMore, 1, 't'), command("SUBSCRIBE", []byte("x"))...)
	if _, err := c2.Write(b); err != nil {
		t.Fatal(err)
	}
	if !closedSoon(c2) {
		t.Error("a SUBSCRIBE command inside a message: connection still open")
	}
}

// TestInteropPyzmqHeartbeatInsideMessage: a libzmq PUB heartbeating
// every 5 ms sends 200 four-frame messages of 400 KiB; our SUB gets
// them all, on one connection.
func TestInteropPyzmqHeartbeatInsideMessage(t *testing.T) {
	const n = 200
	py := startPy(t, "hbmulti", strconv.Itoa(n), strconv.Itoa(200<<10))
	ep := py.next()["endpoint"].(string)
	sub := connected(t, ep, Config{})
	for i := range n {
		m := nextMessage(t, sub)
		if string(m.Payload) != strconv.Itoa(i) || m.Seq != uint64(i+1) {
			t.Fatalf("message %d: payload %q seq %d; stats %+v", i, m.Payload, m.Seq, sub.Stats())
		}
	}
	if got := py.next()["sent"]; got != float64(n) {
		t.Fatalf("python peer says sent %v", got)
	}
}
