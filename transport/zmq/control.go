package zmq

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
)

// control is what a peer's writer sends beside its queue: the PONG
// owed to the peer's last PING and our own PING, when due. As in libzmq,
// a command never meets the queue's bounds (the HWM): it cannot be
// dropped for want of room, and the writer sends it before the next
// batch of the queue, so a busy queue does not hold it back. PONGs
// coalesce: one is owed at most, echoing the latest PING's context, so
// a peer sending a flood of PINGs costs one PONG per batch written.
type control struct {
	mu      sync.Mutex
	live    liveness
	ttl     time.Duration // asked for in our PINGs
	pong    []byte        // the context of the PONG owed
	pongDue bool
	pingDue bool
	// due is pongDue || pingDue, set and cleared with mu held, read
	// without it: the writer looks before each batch, and most find
	// nothing due.
	due   atomic.Bool
	timer *time.Timer
	// wake has a token when something became due.
	wake chan struct{}
}

// startHeartbeat arms the peer's heartbeat timer, once its writer runs
// (the reader may have armed it already, for a PING's TTL).
func (p *peer) startHeartbeat() {
	c := &p.ctl
	c.mu.Lock()
	p.armLocked()
	c.mu.Unlock()
}

// armLocked sets the timer to the liveness deadline; c.mu is held. A
// closing peer's timer stays stopped: close closes p.closing before it
// stops the timer under c.mu, so no one re-arms it after (a PING read
// ahead, a tick under way), to hold the closed peer until it fires.
func (p *peer) armLocked() {
	c := &p.ctl
	d := c.live.deadline()
	if d.IsZero() || p.isClosing() {
		return
	}
	if c.timer == nil {
		c.timer = time.AfterFunc(time.Until(d), p.tick)
	} else {
		c.timer.Reset(time.Until(d))
	}
}

// onPing owes the peer a PONG with context and honours its TTL.
func (p *peer) onPing(ttl time.Duration, context []byte) {
	c := &p.ctl
	c.mu.Lock()
	if c.pongDue {
		p.sock.stats.pongsCoalesced.Add(1)
	}
	c.pong, c.pongDue = context, true
	c.due.Store(true)
	c.live.pinged(time.Now(), ttl, &p.wc.traffic)
	p.armLocked()
	c.mu.Unlock()
	c.signal()
}

// tick runs at the liveness deadline: it makes a PING due, or closes
// the connection of a peer that has gone silent (liveness.tick).
func (p *peer) tick() {
	select {
	case <-p.closing:
		return
	default:
	}
	c := &p.ctl
	c.mu.Lock()
	ping, dead := c.live.tick(time.Now(), &p.wc.traffic)
	if dead != alive {
		c.mu.Unlock()
		p.sock.stats.heartbeatTimeouts.Add(1)
		why := "no answer to our PING within PingTimeout"
		if dead == deadTTL {
			why = "nothing within the TTL of its PING"
		}
		p.sock.log.Debug("zmq: peer heartbeat lost", "remote", p.remote, "why", why)
		p.close()
		return
	}
	if ping {
		c.pingDue = true
		c.due.Store(true)
	}
	p.armLocked()
	c.mu.Unlock()
	if ping {
		c.signal()
	}
}

func (c *control) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// stop disarms the timer.
func (c *control) stop() {
	c.mu.Lock()
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
}

// writeControl writes and flushes the commands due, if any.
func (p *peer) writeControl() error {
	c := &p.ctl
	if !c.due.Load() {
		return nil // no lock: a command made due later signals wake
	}
	c.mu.Lock()
	pong, pongDue, pingDue, ttl := c.pong, c.pongDue, c.pingDue, c.ttl
	c.pong, c.pongDue, c.pingDue = nil, false, false
	c.due.Store(false)
	if pingDue {
		c.live.pingStarting(&p.wc.traffic)
	}
	c.mu.Unlock()
	if !pongDue && !pingDue {
		return nil
	}
	if pongDue {
		if err := p.zc.SendCmd(zmq4.CmdPong, pong); err != nil {
			return err
		}
	}
	if pingDue {
		if err := p.zc.SendCmd(zmq4.CmdPing, pingBody(ttl)); err != nil {
			return err
		}
	}
	if err := p.wc.Flush(); err != nil {
		return err
	}
	if pingDue {
		c.mu.Lock()
		c.live.pingWritten(time.Now(), &p.wc.traffic)
		p.armLocked()
		c.mu.Unlock()
	}
	return nil
}
