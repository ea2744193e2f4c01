package zmq

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// TestDataBeforeReadyRefused: before its READY a peer may send nothing
// but commands (ZMTP 3.0: the handshake is the security mechanism's
// commands). A message frame there is refused at once; it used to be
// read ahead, and the body of one over 64 KiB, once arrived, lifted the
// connection's read deadline with the handshake's: a peer that then
// went silent was held open, uncounted, for ever.
func TestDataBeforeReadyRefused(t *testing.T) {
	const hs = 300 * time.Millisecond
	pub, ep := bound(t, Config{HandshakeTimeout: hs})
	e, _ := parseEndpoint(ep)
	for _, size := range []int{10, 100 << 10} {
		c, err := net.Dial(e.network, e.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		frame := binary.BigEndian.AppendUint64([]byte{flagMore | flagLong}, uint64(size))
		frame = append(frame, bytes.Repeat([]byte("x"), size)...)
		if _, err := c.Write(append(greeting(), frame...)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		c.SetReadDeadline(start.Add(5 * time.Second))
		// EOF, or a reset (we sent what it did not read): closed.
		if _, err := io.Copy(io.Discard, c); errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a %d-byte message frame before READY: connection still open after %v (HandshakeTimeout %v)", size, time.Since(start).Round(time.Millisecond), hs)
		}
	}
	waitCount(t, "HandshakeFailed", func() uint64 { return pub.Stats().HandshakeFailed }, 2)
	if got := pub.sock.pending.available(); got != int64(pub.cfg.MaxPendingBytes) {
		t.Errorf("pending budget %d after the connections closed, want %d", got, pub.cfg.MaxPendingBytes)
	}
}
