package zmq

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"

	"github.com/brokerless/brokerless/transport"
)

// greeting is a ZMTP 3.0 greeting with the NULL mechanism.
func greeting() []byte {
	g := make([]byte, greetingLen)
	g[0], g[9], g[10], g[11] = 0xFF, 0x7F, 3, 0
	copy(g[12:], "NULL")
	return g
}

// command is a ZMTP command frame.
func command(name string, body []byte) []byte {
	b := append([]byte{byte(len(name))}, name...)
	b = append(b, body...)
	if len(b) > 255 {
		return append(binary.BigEndian.AppendUint64([]byte{flagCommand | flagLong}, uint64(len(b))), b...)
	}
	return append([]byte{flagCommand, byte(len(b))}, b...)
}

// ready is a READY command naming socket type typ.
func ready(typ string) []byte {
	prop := append([]byte{11}, "Socket-Type"...)
	prop = binary.BigEndian.AppendUint32(prop, uint32(len(typ)))
	return command("READY", append(prop, typ...))
}

// rawPeer dials ep and does the ZMTP handshake as a socket of type typ
// with zmq4 directly.
func rawPeer(t *testing.T, ep string, typ zmq4.SocketType) (net.Conn, *zmq4.Conn) {
	t.Helper()
	e, _ := parseEndpoint(ep)
	c, err := net.Dial(e.network, e.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	zc, err := zmq4.Open(c, null.Security(), typ, nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, zc
}

// closedSoon reports whether the peer closes c within a few seconds: an
// EOF, or a reset (a peer closing with our bytes unread resets).
func closedSoon(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c)
	return err == nil || errors.Is(err, syscall.ECONNRESET)
}

// TestHugeFrameRefused: a frame announcing far more than MaxMessageBytes
// closes the connection before anything is allocated for it (zmq4 alone
// would allocate the announced length), and is counted.
func TestHugeFrameRefused(t *testing.T) {
	pub, ep := bound(t, Config{MaxMessageBytes: 4096})
	for _, size := range []uint64{4097, 1 << 40} {
		c, _ := rawPeer(t, ep, zmq4.Sub)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		frame := binary.BigEndian.AppendUint64([]byte{flagLong}, size)
		if _, err := c.Write(append(frame, "some"...)); err != nil {
			t.Fatal(err)
		}
		if !closedSoon(c) {
			t.Fatalf("a frame of %d bytes did not close the connection", size)
		}
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
			t.Errorf("a frame announcing %d bytes made %d bytes be allocated", size, d)
		}
	}
	if err := pub.sock.waitPeersBelow(testCtx(t), 1); err != nil {
		t.Errorf("%d subscribers left: %v", pub.Subscribers(), err)
	}
	if st := pub.Stats(); st.TooLarge != 2 {
		t.Errorf("TooLarge %d, want 2", st.TooLarge)
	}
}

// property is one ZMTP metadata property.
func property(k, v string) []byte {
	b := append([]byte{byte(len(k))}, k...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// TestBadReadyRefused: a READY that would make zmq4 panic is refused and
// counted: a property cut short, or a second socket type under a name
// that zmq4's Unicode title-casing turns into "Socket-Type" ("\u017f" is
// the long s, whose title case is "S").
func TestBadReadyRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ready []byte
	}{
		{"property cut short", command("READY", []byte{11, 'S', 'o'})},
		{"long s socket type", command("READY", append(property("Socket-Type", "SUB"), property("\u017focket-type", "NOPE")...))},
		{"non-ASCII name", command("READY", append(property("Socket-Type", "SUB"), property("X-\u00e9", "v")...))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub, ep := bound(t, Config{})
			e, _ := parseEndpoint(ep)
			c, err := net.Dial(e.network, e.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write(append(greeting(), tc.ready...)); err != nil {
				t.Fatal(err)
			}
			if !closedSoon(c) {
				t.Fatal("a malformed READY did not close the connection")
			}
			if st := pub.Stats(); st.HandshakeFailed != 1 {
				t.Errorf("HandshakeFailed %d, want 1", st.HandshakeFailed)
			}
		})
	}
}

// TestHandshakeCheckAgreesWithZmq4: checkHandshake accepts a READY only
// if zmq4, reading the same metadata its own way, sees a socket type it
// knows, whatever the spelling of the property names.
func TestHandshakeCheckAgreesWithZmq4(t *testing.T) {
	for _, key := range []string{"Socket-Type", "socket-type", "Socket-type", "SOCKET-TYPE", "socket_type", "\u017focket-type", "\u017focket-\u0074ype", "Identity"} {
		for _, typ := range []string{"SUB", "NOPE"} {
			props := append(property("Socket-Type", "PUB"), property(key, typ)...)
			var md zmq4.Metadata = map[string]string{}
			if err := md.UnmarshalZMTP(props); err != nil {
				t.Fatal(err)
			}
			zmq4OK := slices.Contains(socketTypes, zmq4.SocketType(md["Socket-Type"]))
			if err := checkHandshake(append([]byte{5}, append([]byte("READY"), props...)...)); err == nil && !zmq4OK {
				t.Errorf("%q=%q accepted, but zmq4 reads socket type %q", key, typ, md["Socket-Type"])
			}
		}
	}
}

// TestPingAnswered: a PING (ZMTP 3.1 heartbeat) is answered with a PONG
// carrying its context, by the connection's writer.
func TestPingAnswered(t *testing.T) {
	_, ep := bound(t, Config{})
	c, zc := rawPeer(t, ep, zmq4.Sub)
	if _, err := c.Write(command("PING", []byte{0, 10, 'c', 't', 'x'})); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	msg, err := zc.RecvMsg()
	if err != nil {
		t.Fatal(err)
	}
	if msg.Type != zmq4.CmdMsg || len(msg.Frames) != 1 || string(msg.Frames[0]) != "ctx" {
		t.Fatalf("got %v, want a PONG with context ctx", msg)
	}
}

// pipeConn is a net.Conn that reads a fixed stream and discards writes.
type pipeConn struct {
	net.Conn
	r io.Reader
}

func newPipeConn(stream []byte) *pipeConn           { return &pipeConn{r: bytes.NewReader(stream)} }
func (p *pipeConn) Read(b []byte) (int, error)      { return p.r.Read(b) }
func (p *pipeConn) Write(b []byte) (int, error)     { return len(b), nil }
func (p *pipeConn) Close() error                    { return nil }
func (p *pipeConn) SetDeadline(time.Time) error     { return nil }
func (p *pipeConn) SetReadDeadline(time.Time) error { return nil }
func (p *pipeConn) RemoteAddr() net.Addr            { return &net.TCPAddr{} }

// FuzzWire feeds a peer's stream, after a valid greeting, through the
// checker into zmq4's handshake and reader, as a SUB would read a PUB:
// nothing may panic, and no frame larger than the limit may reach zmq4.
func FuzzWire(f *testing.F) {
	f.Add(append(ready("PUB"), 0, 3, 'a', 'b', 'c'))
	f.Add(append(ready("PUB"), append(command("PING", []byte{0, 1, 'x'}), flagLong, 0xff, 0, 0, 0, 0, 0, 0, 0)...))
	f.Add(command("READY", []byte{11, 'S', 'o'}))
	f.Add(append(ready("PUB"), flagMore, 1, 'a', flagCommand, 0))
	f.Fuzz(func(t *testing.T, stream []byte) {
		var pings int
		wc := newWireConn(newPipeConn(append(greeting(), stream...)), 1024, func(time.Duration, []byte) { pings++ })
		zc, err := zmq4.Open(wc, null.Security(), zmq4.Sub, nil, false, nil)
		if err != nil {
			return
		}
		wc.handshakeDone()
		for range 1000 {
			msg, err := zc.RecvMsg()
			if err != nil {
				return
			}
			n := 0
			for _, fr := range msg.Frames {
				n += len(fr)
			}
			if n > 1024 || len(msg.Frames) > maxFrames(1024) {
				t.Fatalf("a message of %d bytes in %d frames got through a limit of 1024", n, len(msg.Frames))
			}
		}
	})
}

// TestAnnouncedFramesBounded: frame headers announcing large frames
// whose bodies never come make zmq4 allocate at most MaxPendingBytes
// across the connections (it allocates a frame at its header), each
// such connection fails after FrameTimeout and is counted, and a large
// message that really comes is still received. The headers come once
// the handshake is done, then (second round) with the handshake, read
// ahead during it.
func TestAnnouncedFramesBounded(t *testing.T) {
	const maxMsg, budget, n = 1 << 20, 2 << 20, 4
	sub, err := NewSubscriber(t.Context(), Config{Bind: []string{"tcp://127.0.0.1:0"}, MaxMessageBytes: maxMsg,
		MaxPendingBytes: budget, FrameTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ep := "tcp://" + sub.Addrs()[0].String()
	hdr := append(binary.BigEndian.AppendUint64([]byte{flagLong}, maxMsg-1), 'x')
	for round, afterHandshake := range []bool{true, false} {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var conns []net.Conn
		for range n {
			c, _ := rawPeer(t, ep, zmq4.Pub)
			conns = append(conns, c)
			if !afterHandshake {
				if _, err := c.Write(hdr); err != nil {
					t.Fatal(err)
				}
			}
		}
		if afterHandshake {
			if err := sub.WaitPublishers(testCtx(t), n); err != nil {
				t.Fatal(err)
			}
			for _, c := range conns {
				if _, err := c.Write(hdr); err != nil {
					t.Fatal(err)
				}
			}
		}
		waitCount(t, "budget taken", func() uint64 { return uint64(budget - sub.sock.pending.available()) }, budget-2)
		runtime.GC()
		runtime.ReadMemStats(&after)
		if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > budget+1<<20 {
			t.Errorf("round %d: %d frame headers of %d bytes made the heap grow by %d bytes; MaxPendingBytes is %d", round, n, maxMsg-1, grew, budget)
		}
		for i, c := range conns {
			if !closedSoon(c) {
				t.Fatalf("round %d: connection %d, whose frame's body never came, was not closed", round, i)
			}
		}
		waitCount(t, "FrameTimeouts", func() uint64 { return sub.Stats().FrameTimeouts }, uint64(n*(round+1)))
		if got := sub.sock.pending.available(); got != budget {
			t.Errorf("round %d: pending budget %d after every connection closed, want %d", round, got, budget)
		}
	}

	pub, err := NewPublisher(t.Context(), Config{Connect: []string{ep}, MaxMessageBytes: maxMsg})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if err := pub.WaitSubscribers(testCtx(t), "t", 1); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("b"), maxMsg-1024)
	if err := pub.Publish(testCtx(t), transport.Message{Topic: "t", Payload: big}); err != nil {
		t.Fatal(err)
	}
	if m := nextMessage(t, sub); len(m.Payload) != len(big) {
		t.Errorf("got %d bytes, want %d", len(m.Payload), len(big))
	}
}

// TestPendingBudgetReturned: a large frame read ahead with a handshake
// that then fails (a socket type that does not fit) gives its room in
// MaxPendingBytes back (it used to hold it for ever); and a socket
// closed while a connection waits for room closes.
func TestPendingBudgetReturned(t *testing.T) {
	const maxMsg = 1 << 20
	sub, err := NewSubscriber(t.Context(), Config{Bind: []string{"tcp://127.0.0.1:0"}, MaxMessageBytes: maxMsg,
		MaxPendingBytes: maxMsg, FrameTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	e, _ := parseEndpoint("tcp://" + sub.Addrs()[0].String())
	dial := func(typ string) net.Conn {
		c, err := net.Dial(e.network, e.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		hdr := append(binary.BigEndian.AppendUint64([]byte{flagLong}, maxMsg-1), 'x')
		if _, err := c.Write(append(append(greeting(), ready(typ)...), hdr...)); err != nil {
			t.Fatal(err)
		}
		return c
	}
	avail := func() uint64 { return uint64(maxMsg - sub.sock.pending.available()) }
	for range 3 {
		c := dial("SUB") // a SUB does not talk to a SUB
		if !closedSoon(c) {
			t.Fatal("a SUB peer of a SUB was not refused")
		}
		waitCount(t, "budget back", func() uint64 { return uint64(sub.sock.pending.available()) }, maxMsg)
	}
	dial("PUB")
	waitCount(t, "budget taken", avail, maxMsg-1)
	dial("PUB") // waits for room
	closed := make(chan struct{})
	go func() {
		sub.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-testCtx(t).Done():
		t.Fatal("Close waited for a connection waiting for room in MaxPendingBytes")
	}
}

// FuzzWireTruncated feeds a subscriber's stream through the checker of
// a publisher, which cuts frames over its bound to it (truncateFrames),
// into zmq4's reader: nothing may panic, and no message larger than
// the bound may reach zmq4, whatever the frames cut.
func FuzzWireTruncated(f *testing.F) {
	long := append(binary.BigEndian.AppendUint64([]byte{flagLong}, 600), 1)
	long = append(long, bytes.Repeat([]byte("L"), 599)...)
	f.Add(append(ready("SUB"), long...))
	f.Add(append(ready("SUB"), append(long[:200], append(command("PING", []byte{0, 1, 'x'}), long[200:]...)...)...))
	f.Add(append(ready("SUB"), append(append([]byte{flagMore}, long[1:]...), 0, 2, 0, 'a')...))
	f.Fuzz(func(t *testing.T, stream []byte) {
		const keep, maxWire = 300, 4096
		for _, frames := range recvAll(stream, 1<<16, keep, keep, maxWire) {
			n := 0
			for _, fr := range frames {
				n += len(fr)
			}
			if n > keep {
				t.Fatalf("a message of %d bytes got through a bound of %d", n, keep)
			}
		}
	})
}
