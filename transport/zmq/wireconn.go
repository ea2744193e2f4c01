package zmq

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
)

// ZMTP 3 framing, as far as wireConn needs it (rfc.zeromq.org/spec/23).
const (
	greetingLen   = 64
	flagMore      = 0x01
	flagLong      = 0x02
	flagCommand   = 0x04
	readBufSize   = 64 << 10
	writeBufSize  = 64 << 10
	maxCommandLen = 1 << 10 // after the handshake: PING, PONG, SUBSCRIBE...
	// maxHandshakeLen bounds the peer's READY command (its metadata).
	maxHandshakeLen = 16 << 10
	// minFrames is the most frames a message may have at any
	// MaxMessageBytes; beyond, a message may have one frame per
	// frameCost bytes of MaxMessageBytes (about what zmq4 spends on a
	// frame beside its bytes), so that a message of many empty frames
	// costs at most about twice MaxMessageBytes, or 64 KiB.
	minFrames = 1024
	frameCost = 64
)

// progressChunk is the progress of a message over 64 KiB, or of a large
// frame's body, that gives it FrameTimeout again.
const progressChunk = 64 << 10

// maxFrames is how many frames a message may have, at most maxMessage
// bytes: libzmq sets no such limit.
func maxFrames(maxMessage int) int { return max(minFrames, maxMessage/frameCost) }

// wireConn is the net.Conn that go-zeromq/zmq4's Conn reads and writes
// through. zmq4 allocates a frame's whole length, as its peer announced
// it, before reading the body, and answers a PING from the goroutine
// that reads while another may be writing. wireConn reads ahead and
// checks the framing before zmq4 sees it: a frame or message over
// maxMessage bytes, or of more than maxFrames frames, fails the
// connection with ErrFrameTooLarge before anything is allocated; and it
// takes PING commands out of the stream, handing their TTL and context
// to onPing, so that the connection's one writer answers them; once
// the connection's liveness watches it, it reports in traffic when bytes
// arrive and whether it is waiting for the network. Writes are buffered
// once the handshake is done (Flush sends them); during it they go
// straight out.
type wireConn struct {
	net.Conn
	maxMessage uint64
	maxFrames  int
	// truncate, if set, is the length a message frame longer than it
	// (up to maxWire bytes) is cut to, the rest of its body discarded
	// unread by zmq4 (discard): a publisher's subscriber sends only
	// subscriptions, and one beyond truncate bytes is refused whatever
	// its end (truncateFrames).
	truncate, maxWire, discard uint64
	onPing                     func(ttl time.Duration, context []byte)
	// traffic is what the reader tells the connection's liveness: that
	// bytes arrived, and whether it waits for the network (not for our
	// application to take what it read).
	traffic traffic

	// pending is the socket's budget for large frames' bodies; reserved
	// what this connection holds of it (its current frame's size), given
	// back when the body has arrived or the connection closes.
	pending      *pendingBudget
	frameTimeout time.Duration
	closing      <-chan struct{}
	reserved     atomic.Int64
	onTimeout    func()
	// bodyLeft is how long the reader may still wait for the network
	// for the next progressChunk bytes of the current message once it
	// is over 64 KiB, or of the body of a large frame (timing): zmq4
	// holds every frame of a message until its last. Each progressChunk
	// bytes that arrive give it FrameTimeout again (never more), so a
	// peer sending slowly but steadily is not cut off, and a message
	// takes at most (MaxMessageBytes/progressChunk+1)*FrameTimeout.
	// Only the time spent in the network's Read counts, not the time
	// our application takes to receive what was read before (a header
	// may be read ahead of a message the reader waits to hand on while
	// the receive queue is full). progress counts the message's bytes
	// checked since bodyLeft was last given FrameTimeout.
	bodyLeft time.Duration
	progress int
	timing   bool
	// handshakeBy is the handshake's deadline, until handshakeDone.
	handshakeBy time.Time

	buf     []byte
	r, ok   int   // buf[r:ok] checked, ready for zmq4; buf[ok:w] not yet
	w       int   // end of the bytes read from the network
	readErr error // after buf[r:w] is consumed

	// Framing state of the bytes checked so far.
	greeting   int    // greeting bytes still expected
	body       uint64 // body bytes of the current frame still expected
	lastFrame  bool   // the current frame is its message's last
	msgBytes   uint64 // bytes of the current message so far
	msgFrames  int    // frames of the current message so far
	handshaken bool   // the peer's handshake command has passed

	bw *bufio.Writer
}

func newWireConn(c net.Conn, maxMessage int, onPing func(time.Duration, []byte)) *wireConn {
	return &wireConn{
		Conn:       c,
		maxMessage: uint64(maxMessage),
		maxFrames:  maxFrames(maxMessage),
		onPing:     onPing,
		buf:        make([]byte, readBufSize),
		greeting:   greetingLen,
	}
}

// truncateFrames makes message frames longer than keep bytes, up to
// maxWire, reach zmq4 cut to keep bytes; maxMessage bounds what zmq4
// holds of a message, maxWire what may arrive of one frame.
func (c *wireConn) truncateFrames(keep, maxWire int) {
	if keep < maxWire {
		c.truncate, c.maxWire = uint64(keep), uint64(maxWire)
	}
}

// limitPending makes frames over largeFrame bytes wait for room in b,
// and their bodies arrive within timeout; onTimeout is called when one
// does not. closing cancels a wait for room.
func (c *wireConn) limitPending(b *pendingBudget, timeout time.Duration, closing <-chan struct{}, onTimeout func()) {
	c.pending, c.frameTimeout, c.closing, c.onTimeout = b, timeout, closing, onTimeout
}

// Close closes the connection and gives back what it reserved.
func (c *wireConn) Close() error {
	c.release()
	return c.Conn.Close()
}

// release gives back the reservation of the current frame, if any.
func (c *wireConn) release() {
	if n := c.reserved.Swap(0); n > 0 {
		c.pending.give(n)
	}
}

// reserve takes size bytes of the pending budget for the frame whose
// header is next, and sets the deadline of its body.
func (c *wireConn) reserve(size uint64) error {
	deadline := time.Now().Add(c.bodyLeft)
	if !c.pending.take(int64(size), deadline, c.closing) {
		select {
		case <-c.closing:
			return net.ErrClosed
		default:
		}
		c.onTimeout()
		return fmt.Errorf("%w: no room for a %d-byte frame within %v", ErrFrameTimeout, size, c.frameTimeout)
	}
	c.reserved.Store(int64(size))
	select {
	case <-c.closing: // Close may have run before the reservation
		c.release()
		return net.ErrClosed
	default:
	}
	c.bodyLeft = time.Until(deadline)
	return nil
}

// progressed counts n bytes of the body of the timed message, if any:
// each progressChunk of them gives it FrameTimeout again. Only a
// message's bytes count, not the commands (PINGs) among its frames nor
// its frames' headers, so a message's time stays bounded.
func (c *wireConn) progressed(n int) {
	if !c.timing {
		return
	}
	if c.progress += n; c.progress >= progressChunk {
		c.progress %= progressChunk
		c.bodyLeft = c.frameTimeout
	}
}

// frameDone is called when a frame's body has arrived: it ends its
// reservation, if any, and the message's timing after its last frame.
func (c *wireConn) frameDone() {
	c.release()
	if c.lastFrame && c.timing {
		c.timing = false
		c.Conn.SetReadDeadline(c.handshakeBy)
	}
}

// handshakeDeadline sets the handshake's deadline.
func (c *wireConn) handshakeDeadline(t time.Time) {
	c.handshakeBy = t
	c.Conn.SetDeadline(t)
}

// Read gives zmq4 checked bytes only.
func (c *wireConn) Read(p []byte) (int, error) {
	for c.r == c.ok {
		if c.ok < c.w {
			if err := c.check(); err != nil {
				c.readErr, c.w = err, c.ok
			}
			if c.r < c.ok {
				break
			}
		}
		if c.readErr != nil {
			return 0, c.readErr
		}
		c.fill()
	}
	n := copy(p, c.buf[c.r:c.ok])
	c.r += n
	return n, nil
}

// fill reads more from the network, first moving unconsumed bytes to
// the front of the buffer.
func (c *wireConn) fill() {
	if c.r > 0 {
		copy(c.buf, c.buf[c.r:c.w])
		c.ok -= c.r
		c.w -= c.r
		c.r = 0
	}
	timing := c.timing
	var start time.Time
	if timing {
		start = time.Now()
		d := start.Add(c.bodyLeft)
		if !c.handshakeBy.IsZero() && c.handshakeBy.Before(d) {
			d = c.handshakeBy
		}
		c.Conn.SetReadDeadline(d)
	}
	reporting := c.traffic.reading()
	n, err := c.Conn.Read(c.buf[c.w:])
	if reporting {
		c.traffic.read(n)
	}
	if timing {
		c.bodyLeft -= time.Since(start)
	}
	c.w += n
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) && timing && c.bodyLeft <= 0 {
			c.onTimeout()
			err = fmt.Errorf("%w: a message over %d bytes, or a frame's body, stalled: less than %d bytes of it in %v: %v", ErrFrameTimeout, largeFrame, progressChunk, c.frameTimeout, err)
		}
		c.readErr = err
	}
}

// check advances c.ok over the bytes it can vouch for. It stops at a
// frame header or command it does not have whole yet.
func (c *wireConn) check() error {
	for c.ok < c.w {
		avail := c.buf[c.ok:c.w]
		switch {
		case c.greeting > 0:
			n := min(c.greeting, len(avail))
			if err := checkGreeting(greetingLen-c.greeting, avail[:n]); err != nil {
				return err
			}
			c.greeting -= n
			c.ok += n
		case c.body > 0:
			n := min(c.body, uint64(len(avail)))
			c.body -= n
			c.ok += int(n)
			c.progressed(int(n))
			if c.body == 0 && c.discard == 0 {
				c.frameDone()
			}
		case c.discard > 0:
			n := min(c.discard, uint64(len(avail)))
			copy(c.buf[c.ok:], c.buf[c.ok+int(n):c.w])
			c.w -= int(n)
			c.discard -= n
			c.progressed(int(n))
			if c.discard == 0 {
				c.frameDone()
			}
		default:
			done, err := c.checkFrame(avail)
			if err != nil || !done {
				return err
			}
		}
	}
	return nil
}

// checkGreeting checks the bytes b of the peer's greeting from offset
// off: a ZMTP 1.0 or 2.0 peer sends a greeting shorter than ZMTP 3's,
// then waits for ours, which zmq4 would wait for whole until the
// handshake's deadline.
func checkGreeting(off int, b []byte) error {
	for i, v := range b {
		switch off + i {
		case 0, 9:
			if v != 0xFF && off+i == 0 || v&1 == 0 && off+i == 9 {
				return fmt.Errorf("%w: the peer speaks ZMTP 1.0 (or no ZMTP), ZMTP 3 is needed", ErrVersion)
			}
		case 10:
			if v < 3 {
				return fmt.Errorf("%w: the peer speaks ZMTP %d.0, ZMTP 3 is needed", ErrVersion, v+1)
			}
		}
	}
	return nil
}

// checkFrame checks the frame header at the start of avail, and a
// command frame whole. done is false when more bytes are needed.
func (c *wireConn) checkFrame(avail []byte) (done bool, err error) {
	if len(avail) < 2 {
		return false, nil
	}
	flags := avail[0]
	hdr, size := 2, uint64(avail[1])
	if flags&flagLong != 0 {
		if len(avail) < 9 {
			return false, nil
		}
		hdr, size = 9, binary.BigEndian.Uint64(avail[1:])
	}
	if flags&^(flagMore|flagLong|flagCommand) != 0 {
		return false, fmt.Errorf("%w: reserved flag bits %#x", ErrBadFrame, flags)
	}
	if flags&flagCommand != 0 {
		if flags&flagMore != 0 {
			return false, fmt.Errorf("%w: a command with more frames", ErrBadFrame)
		}
		limit := uint64(maxCommandLen)
		if !c.handshaken {
			limit = maxHandshakeLen
		}
		if size > limit {
			return false, fmt.Errorf("%w: command of %d bytes", ErrFrameTooLarge, size)
		}
		if uint64(len(avail)) < uint64(hdr)+size {
			return false, nil
		}
		body := avail[hdr : uint64(hdr)+size]
		if !c.handshaken {
			if err := checkHandshake(body); err != nil {
				return false, err
			}
			c.handshaken = true
		} else if len(body) >= 5 && string(body[:5]) == "\x04PING" {
			c.ping(body[5:], hdr+int(size))
			return true, nil
		} else if c.msgFrames > 0 {
			// libzmq sends its heartbeats at the next frame boundary,
			// inside a message too; zmq4 would take the command for a
			// frame of it. A PONG only says the peer is alive: its
			// bytes arrived.
			if len(body) >= 5 && string(body[:5]) == "\x04PONG" {
				c.skip(hdr + int(size))
				return true, nil
			}
			return false, fmt.Errorf("%w: a command inside a message", ErrBadFrame)
		}
		c.ok += hdr + int(size)
		return true, nil
	}
	if !c.handshaken {
		// Before its READY a peer sends commands only; read ahead, a
		// large frame's body would lift the handshake's deadline.
		return false, fmt.Errorf("%w: a message frame before the handshake command", ErrBadFrame)
	}
	wire := size
	if c.truncate > 0 && size > c.truncate && size <= c.maxWire {
		// A long header (9 bytes): truncate is over 255.
		size = c.truncate
	}
	if size > largeFrame && c.pending != nil && c.r < c.ok && size <= c.maxMessage {
		// Its room may take a while: first let zmq4 take what is
		// checked (a whole message, a READY); checked again then.
		return false, nil
	}
	c.msgFrames++
	if size > c.maxMessage || c.msgBytes+size > c.maxMessage {
		return false, fmt.Errorf("%w: message of %d bytes or more, at most %d allowed", ErrFrameTooLarge, c.msgBytes, c.maxMessage)
	}
	if c.msgFrames > c.maxFrames {
		return false, fmt.Errorf("%w: more than %d frames", ErrFrameTooLarge, c.maxFrames)
	}
	if c.pending != nil && !c.timing && c.msgBytes+size > largeFrame {
		c.bodyLeft, c.progress, c.timing = c.frameTimeout, 0, true
	}
	if size > largeFrame && c.pending != nil {
		if err := c.reserve(size); err != nil {
			return false, err
		}
	}
	c.msgBytes += size
	c.lastFrame = flags&flagMore == 0
	if c.lastFrame {
		c.msgFrames, c.msgBytes = 0, 0
	}
	if wire != size {
		binary.BigEndian.PutUint64(c.buf[c.ok+1:], size)
	}
	c.ok += hdr
	c.body, c.discard = size, wire-size
	if size == 0 && c.discard == 0 {
		c.frameDone()
	}
	return true, nil
}

// checkHandshake checks the peer's handshake command: a READY's
// metadata must be well formed and name a socket type zmq4 knows, as
// zmq4 reads it without checking (a truncated property, or a missing or
// unknown Socket-Type, makes it panic). Property names must be what
// ZMTP allows (ASCII letters, digits, "-_.+"): zmq4 title-cases them
// with Unicode rules, under which other names can become "Socket-Type"
// too. The socket type is then read with zmq4's own parser, so that it
// is the one zmq4 will see.
func checkHandshake(body []byte) error {
	if len(body) == 0 || int(body[0]) > len(body)-1 {
		return fmt.Errorf("%w: handshake command without a name", ErrBadFrame)
	}
	name, props := string(body[1:1+body[0]]), body[1+body[0]:]
	if name != "READY" {
		return nil
	}
	for rest := props; len(rest) > 0; {
		k := int(rest[0])
		if k == 0 || len(rest) < 1+k+4 {
			return fmt.Errorf("%w: READY property truncated", ErrBadFrame)
		}
		if !isPropertyName(rest[1 : 1+k]) {
			return fmt.Errorf("%w: READY property name %q", ErrBadFrame, rest[1:1+k])
		}
		v := binary.BigEndian.Uint32(rest[1+k:])
		rest = rest[1+k+4:]
		if uint64(v) > uint64(len(rest)) {
			return fmt.Errorf("%w: READY property value truncated", ErrBadFrame)
		}
		rest = rest[v:]
	}
	md := zmq4.Metadata{}
	if err := md.UnmarshalZMTP(props); err != nil {
		return fmt.Errorf("%w: READY metadata: %v", ErrBadFrame, err)
	}
	if typ := md[zmtpSocketType]; !slices.Contains(socketTypes, zmq4.SocketType(typ)) {
		return fmt.Errorf("%w: READY names socket type %q", ErrBadFrame, typ)
	}
	return nil
}

// zmtpSocketType is the property name under which zmq4 keeps the
// peer's socket type.
const zmtpSocketType = "Socket-Type"

// isPropertyName reports whether name is made of the characters ZMTP
// allows in a property name: ALPHA, DIGIT, "-", "_", ".", "+".
func isPropertyName(name []byte) bool {
	for _, b := range name {
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9',
			b == '-', b == '_', b == '.', b == '+':
		default:
			return false
		}
	}
	return true
}

// socketTypes are the socket types zmq4 knows.
var socketTypes = []zmq4.SocketType{
	zmq4.Pair, zmq4.Pub, zmq4.Sub, zmq4.Req, zmq4.Rep, zmq4.Dealer, zmq4.Router,
	zmq4.Pull, zmq4.Push, zmq4.XPub, zmq4.XSub,
}

// ping hands a PING's TTL and context to onPing and takes the n bytes
// of its frame out of the buffer.
func (c *wireConn) ping(ttlContext []byte, n int) {
	if ttl, ctx, ok := parsePing(ttlContext); ok && c.onPing != nil {
		c.onPing(ttl, append([]byte(nil), ctx...))
	}
	c.skip(n)
}

// skip takes the n bytes of the command at c.ok out of the buffer.
func (c *wireConn) skip(n int) {
	copy(c.buf[c.ok:], c.buf[c.ok+n:c.w])
	c.w -= n
}

// handshakeDone lifts the handshake's deadline (the body of a large
// frame read ahead meanwhile keeps its own: fill sets it) and makes
// later writes buffered.
func (c *wireConn) handshakeDone() {
	c.handshakeBy = time.Time{}
	c.Conn.SetDeadline(time.Time{})
	c.bw = bufio.NewWriterSize(c.Conn, writeBufSize)
}

// Write buffers p once the handshake is done.
func (c *wireConn) Write(p []byte) (int, error) {
	if c.bw == nil {
		return c.Conn.Write(p)
	}
	return c.bw.Write(p)
}

// Flush sends what Write buffered.
func (c *wireConn) Flush() error {
	if c.bw == nil {
		return nil
	}
	return c.bw.Flush()
}
