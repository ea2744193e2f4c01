package zmq

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"
)

// chunkConn is a pipeConn that returns at most n bytes a Read, so
// frames and their cut bodies arrive split across reads.
type chunkConn struct {
	*pipeConn
	n int
}

func (c *chunkConn) Read(b []byte) (int, error) { return c.pipeConn.Read(b[:min(len(b), c.n)]) }

// recvAll reads stream's messages through a checker of bound maxMessage
// that cuts frames over keep bytes, up to maxWire (none if keep is 0),
// reading chunk bytes at a time. Commands zmq4 returns (one unknown to
// it, up to maxCommandLen) are left out, as peer.readLoop leaves them.
func recvAll(stream []byte, chunk, keep, maxMessage, maxWire int) [][][]byte {
	wc := newWireConn(&chunkConn{newPipeConn(append(greeting(), stream...)), chunk}, maxMessage, nil)
	if keep > 0 {
		wc.truncateFrames(keep, maxWire)
	}
	zc, err := zmq4.Open(wc, null.Security(), zmq4.Pub, nil, false, nil)
	if err != nil {
		return nil
	}
	wc.handshakeDone()
	var msgs [][][]byte
	for range 1000 {
		msg, err := zc.RecvMsg()
		if err != nil {
			break
		}
		if msg.Type == zmq4.CmdMsg {
			continue
		}
		msgs = append(msgs, msg.Frames)
	}
	return msgs
}

// checkSameStream: what a publisher's checker that cuts long frames
// hands zmq4 is the stream read whole, each frame cut to keep bytes:
// a cut frame's discarded rest never becomes frames of its own, nor
// swallows the frames after it.
func checkSameStream(t *testing.T, stream []byte, chunk int) {
	const keep, maxWire = 300, 4096
	got := recvAll(stream, chunk, keep, keep, maxWire)
	want := recvAll(stream, 1<<16, 0, maxWire, 0)
	for i, m := range got {
		if i >= len(want) {
			// The reference may fail a message the cut one passes
			// (over maxWire whole): nothing to compare beyond.
			return
		}
		if len(m) != len(want[i]) {
			t.Fatalf("message %d: %d frames, want %d", i, len(m), len(want[i]))
		}
		for j, fr := range m {
			w := want[i][j]
			if len(w) > keep {
				w = w[:keep]
			}
			if !bytes.Equal(fr, w) {
				t.Fatalf("message %d frame %d: %q, want %q", i, j, fr, w)
			}
		}
	}
}

// TestTruncatedFramesKeepTheStream: frames cut at the boundary and
// beyond it, with MORE, followed by others, in long and short headers,
// split across reads of every size up to 9 bytes.
func TestTruncatedFramesKeepTheStream(t *testing.T) {
	frame := func(flags byte, body []byte) []byte {
		if len(body) > 255 || flags&flagLong != 0 {
			return append(binary.BigEndian.AppendUint64([]byte{flags | flagLong}, uint64(len(body))), body...)
		}
		return append([]byte{flags, byte(len(body))}, body...)
	}
	sub := func(n int, c byte) []byte { return append([]byte{1}, bytes.Repeat([]byte{c}, n-1)...) }
	var s []byte
	s = append(s, ready("SUB")...)
	s = append(s, frame(0, sub(300, 'a'))...)            // exactly the bound
	s = append(s, frame(0, sub(301, 'b'))...)            // one over
	s = append(s, frame(flagMore, sub(1000, 'c'))...)    // cut, MORE
	s = append(s, frame(0, nil)...)                      // its last frame, empty
	s = append(s, frame(flagLong, sub(5, 'e'))...)       // long header, short frame
	s = append(s, command("PING", []byte{0, 1, 'x'})...) // after a cut frame
	s = append(s, frame(0, sub(4096, 'f'))...)           // at maxWire
	s = append(s, frame(0, sub(2, 'g'))...)
	for chunk := 1; chunk <= 9; chunk++ {
		checkSameStream(t, s, chunk)
	}
	if got := recvAll(s, 7, 300, 300, 4096); len(got) != 6 {
		t.Fatalf("%d messages, want 6", len(got))
	}
}

// FuzzWireTruncatedSameStream is checkSameStream on any stream, read
// in chunks of any size.
func FuzzWireTruncatedSameStream(f *testing.F) {
	long := append(binary.BigEndian.AppendUint64([]byte{flagLong | flagMore}, 600), 1)
	long = append(long, bytes.Repeat([]byte("L"), 599)...)
	f.Add(append(ready("SUB"), append(long, 0, 2, 1, 'a')...), uint8(5))
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8) {
		checkSameStream(t, stream, int(chunk%64)+1)
	})
}
