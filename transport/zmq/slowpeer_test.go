package zmq

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
)

// slowFrameTimeout is the FrameTimeout of the slow-peer tests; they send
// 1 MiB at 640 KB/s, eight times the least rate it asks (64 KiB a
// FrameTimeout), in twice as long as FrameTimeout. (At four times the
// least rate, a writer stalled 300 ms on a loaded machine was cut.)
const slowFrameTimeout = 800 * time.Millisecond

// writeSlowly writes b in 32 KiB pieces, one every 50 ms: a slow link.
func writeSlowly(t *testing.T, c net.Conn, b []byte) {
	t.Helper()
	for len(b) > 0 {
		n := min(len(b), 32<<10)
		if _, err := c.Write(b[:n]); err != nil {
			t.Fatalf("%d bytes left unsent: %v", len(b), err)
		}
		b = b[n:]
		time.Sleep(50 * time.Millisecond) // the link's slowness: what this test is about
	}
}

// TestSlowHonestPeerLargeMessage: a message over 64 KiB (one large
// frame, or many small ones) that keeps arriving at a steady rate is
// received however long it takes in all: FrameTimeout bounds how long
// the reader waits for 64 KiB more of it, not the whole message (which
// cut off every large message of a peer on a slow link).
func TestSlowHonestPeerLargeMessage(t *testing.T) {
	const size = 1 << 20
	oneFrame := append([]byte{flagMore, 1, 't'}, binary.BigEndian.AppendUint64([]byte{flagLong}, size)...)
	oneFrame = append(oneFrame, bytes.Repeat([]byte("p"), size)...)
	smallFrames := []byte{flagMore, 1, 't'}
	for range size / 257 {
		smallFrames = append(smallFrames, append([]byte{flagMore, 255}, bytes.Repeat([]byte("f"), 255)...)...)
	}
	smallFrames = append(smallFrames, 0, 1, 'p')
	for _, tc := range []struct {
		name string
		wire []byte
	}{{"one large frame", oneFrame}, {"small frames", smallFrames}} {
		t.Run(tc.name, func(t *testing.T) {
			sub, err := NewSubscriber(t.Context(), Config{Bind: []string{"tcp://127.0.0.1:0"},
				FrameTimeout: slowFrameTimeout, MaxMessageBytes: 2 << 20})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			c, _ := rawPeer(t, "tcp://"+sub.Addrs()[0].String(), zmq4.Pub)
			start := time.Now()
			writeSlowly(t, c, tc.wire)
			m := nextMessage(t, sub)
			if len(m.Payload) == 0 {
				t.Errorf("got an empty payload")
			}
			if st := sub.Stats(); st.FrameTimeouts != 0 {
				t.Errorf("FrameTimeouts %d after %v (FrameTimeout %v): a slow, steady peer was cut off", st.FrameTimeouts,
					time.Since(start).Round(time.Millisecond), slowFrameTimeout)
			}
		})
	}
}

// dripFT is the FrameTimeout of the tests of peers that keep a message
// going too slowly (dripUntilCut).
const dripFT = 300 * time.Millisecond

// dripUntilCut has a peer of a subscriber with FrameTimeout dripFT send
// first, then piece every dripFT/4 (its pace: what these tests are
// about) for up to 20 dripFT, until the subscriber cuts it for a frame
// timeout, and returns how long after first that took.
func dripUntilCut(t *testing.T, first, piece []byte) time.Duration {
	t.Helper()
	sub, err := NewSubscriber(t.Context(), Config{Bind: []string{"tcp://127.0.0.1:0"}, FrameTimeout: dripFT, MaxMessageBytes: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	c, _ := rawPeer(t, "tcp://"+sub.Addrs()[0].String(), zmq4.Pub)
	if _, err := c.Write(first); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for time.Since(start) < 20*dripFT {
		if _, err := c.Write(piece); err != nil {
			break // closed
		}
		time.Sleep(dripFT / 4)
	}
	waitCount(t, "FrameTimeouts", func() uint64 { return sub.Stats().FrameTimeouts }, 1)
	return time.Since(start)
}

// TestSlowlorisBelowLeastRate: a peer sending a large message slower
// than 64 KiB a FrameTimeout, however steadily, is still cut off.
func TestSlowlorisBelowLeastRate(t *testing.T) {
	header := append([]byte{flagMore, 1, 't'}, binary.BigEndian.AppendUint64([]byte{flagLong}, 1<<20)...)
	piece := bytes.Repeat([]byte("p"), 8<<10) // 32 KiB a FrameTimeout: half the least rate
	if d := dripUntilCut(t, header, piece); d > 10*dripFT {
		t.Errorf("a frame arriving at half the least rate was cut after %v, FrameTimeout %v", d.Round(time.Millisecond), dripFT)
	}
}

// TestPingsAreNoProgress: PINGs inside an unfinished message over
// 64 KiB, however many, do not make it progress: a peer sending them
// and no more of the message is cut off after FrameTimeout, as one
// sending nothing is, so it cannot make a subscriber hold the message
// for ever.
func TestPingsAreNoProgress(t *testing.T) {
	frame := append([]byte{flagMore, 255}, bytes.Repeat([]byte("f"), 255)...)
	unfinished := bytes.Repeat(frame, 400)                                                              // 100 KiB
	pings := bytes.Repeat(command("PING", append([]byte{0, 0}, bytes.Repeat([]byte("c"), 990)...)), 64) // 64 KiB
	if d := dripUntilCut(t, unfinished, pings); d > 10*dripFT {
		t.Errorf("a message kept unfinished by PINGs was cut after %v, FrameTimeout %v", d.Round(time.Millisecond), dripFT)
	}
}
