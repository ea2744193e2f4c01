package zmq

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"
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

// closedSoon reports whether the peer closes c within a few seconds.
func closedSoon(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c)
	return err == nil // EOF: closed by the peer, not timed out
}

// TestHugeFrameRefused: a frame announcing far more than MaxMessageBytes
// closes the connection before anything is allocated for it (zmq4 alone
// would allocate the announced length).
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
		wc := newWireConn(newPipeConn(append(greeting(), stream...)), 1024, func([]byte) { pings++ })
		zc, err := zmq4.Open(wc, null.Security(), zmq4.Sub, nil, false, nil)
		if err != nil {
			return
		}
		wc.buffer()
		for range 1000 {
			msg, err := zc.RecvMsg()
			if err != nil {
				return
			}
			n := 0
			for _, fr := range msg.Frames {
				n += len(fr)
			}
			if n > 1024 || len(msg.Frames) > maxFrames {
				t.Fatalf("a message of %d bytes in %d frames got through a limit of 1024", n, len(msg.Frames))
			}
		}
	})
}
