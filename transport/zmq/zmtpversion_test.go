package zmq

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestZMTP2PeerRefusedAtOnce: a peer that speaks ZMTP 2.0 (libzmq 3.x)
// or 1.0 is refused as soon as its greeting says so, with an error that
// says why (ErrVersion); zmq4 waited for a 64-byte greeting such a peer
// never sends, so the connection failed only at HandshakeTimeout, with
// a bare i/o timeout.
func TestZMTP2PeerRefusedAtOnce(t *testing.T) {
	const hs = 10 * time.Second
	var log syncBuffer
	pub, ep := bound(t, Config{HandshakeTimeout: hs, Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	e, _ := parseEndpoint(ep)
	for _, tc := range []struct {
		name  string
		hello []byte
	}{
		// ZMTP 2.0: signature, revision 1, socket type SUB (2), then an
		// empty identity frame.
		{"ZMTP 2.0", []byte{0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 1, 2, 0, 0}},
		// ZMTP 1.0: an identity frame (length 1, flags 0).
		{"ZMTP 1.0", []byte{1, 0}},
	} {
		c, err := net.Dial(e.network, e.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write(tc.hello); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		c.SetReadDeadline(start.Add(hs / 2))
		if _, err := io.Copy(io.Discard, c); errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s peer: connection still open after %v (HandshakeTimeout %v)", tc.name, time.Since(start).Round(time.Millisecond), hs)
		}
	}
	waitCount(t, "HandshakeFailed", func() uint64 { return pub.Stats().HandshakeFailed }, 2)
	if got := log.String(); strings.Count(got, "ZMTP 3") < 2 {
		t.Errorf("the log does not say twice that ZMTP 3 is needed:\n%s", got)
	}
}
