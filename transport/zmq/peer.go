package zmq

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
)

// peer is one ZMTP connection of a socket, past its handshake. go-zeromq
// /zmq4's Conn does the handshake and the framing; the peer runs it with
// one reader (the calling goroutine of serve) and one writer, so a slow
// or stalled peer holds up no one but itself.
type peer struct {
	sock   *socket
	wc     *wireConn
	zc     *zmq4.Conn
	typ    zmq4.SocketType // the peer's socket type
	remote string
	out    *outq
	// ctl is what the writer sends beside out: PONGs and PINGs.
	ctl        control
	closing    chan struct{}
	closeOnce  sync.Once
	writerDone chan struct{}
	// written is the mark of the last message written.
	written atomic.Uint64
	// state is what the socket's role keeps about the peer.
	state any
}

func newPeer(s *socket, c net.Conn) *peer {
	p := &peer{
		sock:   s,
		remote: c.RemoteAddr().String(),
		out:    newOutq(s.queueItems, s.queueBytes),
		ctl: control{
			live: newLiveness(time.Now(), s.pingInterval, s.pingTimeout),
			ttl:  s.pingTTL,
			wake: make(chan struct{}, 1),
		},
		closing:    make(chan struct{}),
		writerDone: make(chan struct{}),
	}
	p.wc = newWireConn(c, s.maxMessage, p.onPing)
	p.wc.truncateFrames(s.maxMessage, s.maxWireFrame)
	if p.ctl.live.watched() {
		p.wc.traffic.watch()
	}
	p.wc.limitPending(s.pending, s.frameTime, p.closing, func() { s.stats.frameTimeouts.Add(1) })
	return p
}

// close ends the connection; the reader and the writer return.
func (p *peer) close() {
	p.closeOnce.Do(func() {
		close(p.closing)
		p.ctl.stop()
		msgs, zmtp := p.out.close()
		p.sock.stats.discarded.Add(uint64(msgs))
		p.sock.stats.discardedZMTP.Add(uint64(zmtp))
		p.wc.Close()
	})
}

// isClosing says whether close was called.
func (p *peer) isClosing() bool {
	select {
	case <-p.closing:
		return true
	default:
		return false
	}
}

// readLoop hands every message the peer sends to the socket's role,
// until the connection fails or the role refuses one.
func (p *peer) readLoop() error {
	for {
		msg, err := p.zc.RecvMsg()
		if err != nil {
			return err
		}
		if msg.Type == zmq4.CmdMsg {
			continue // PONG, or a command of a later ZMTP
		}
		if err := p.sock.role.received(p, msg.Frames); err != nil {
			return err
		}
	}
}

// writeLoop writes what is queued, flushing once the queue is empty,
// and before each batch the commands due (writeControl).
func (p *peer) writeLoop() {
	defer close(p.writerDone)
	defer p.close()
	p.startHeartbeat()
	var batch []zmsg
	for {
		select {
		case <-p.out.notify:
		case <-p.ctl.wake:
		case <-p.closing:
			return
		}
		for {
			if p.writeControl() != nil {
				return
			}
			batch = p.out.take(batch)
			if len(batch) == 0 {
				break
			}
			for i := range batch {
				if p.zc.SendMsg(zmq4.NewMsgFrom(batch[i].frames...)) != nil {
					p.sock.stats.discard(batch[i:])
					return
				}
			}
			if p.wc.Flush() != nil {
				p.sock.stats.discard(batch) // some of it may have gone out
				return
			}
			for i := len(batch) - 1; i >= 0; i-- {
				if m := batch[i].mark; m != 0 {
					p.written.Store(m)
					break
				}
			}
			p.out.release(batch)
			clear(batch)
			p.sock.progress.notify()
			if n, _ := p.out.usage(); n == 0 && p.sock.onIdle != nil {
				p.sock.onIdle()
			}
		}
	}
}

// flushed reports whether every message up to mark that was queued for
// the peer has been written.
func (p *peer) flushed(mark uint64) bool {
	w := p.written.Load()
	return w >= mark || w >= p.out.lastQueued()
}
