package statsd

import (
	"errors"
	"net"
	"time"
)

// run is the sender goroutine: it writes queued packets, flushes the
// shards every FlushInterval and when Flush asks, and on Close flushes
// and drains the queue.
func (c *Client) run() {
	defer close(c.done)
	tick := time.NewTicker(c.cfg.FlushInterval)
	defer tick.Stop()
	for {
		select {
		case p := <-c.queue:
			c.write(p)
		case <-tick.C:
			c.flushTallies()
			c.flushShards(false)
		case flushed := <-c.flushReq:
			c.flushTallies()
			c.flushShards(false)
			for range len(c.queue) { // what was queued by now: only this goroutine takes from the queue
				c.write(<-c.queue)
			}
			close(flushed)
		case <-c.closing:
			c.w.finish() // the flushes below may write (makeRoom)
			c.flushTallies()
			c.flushShards(true)
			for {
				select {
				case p := <-c.queue:
					c.write(p)
				default:
					c.closeErr = c.w.close()
					return
				}
			}
		}
	}
}

// makeRoom writes queued packets until one is free. The flushes run in
// the sender goroutine, so nothing drains the queue while they fill it:
// without this, a flush needing more packets than are free would drop
// lines although the network is idle. Called by the sender goroutine,
// with no shard locked.
func (c *Client) makeRoom() {
	for len(c.free) == 0 {
		select {
		case p := <-c.queue:
			c.write(p)
		default:
			return
		}
	}
}

// write sends one packet, numbered when sequence lines are on, and
// returns it to the free list.
func (c *Client) write(p *clientPacket) {
	start := c.head
	if c.cfg.Sequence {
		c.w.seqLine = AppendSeqLine(c.w.seqLine[:0], c.cfg.ClientID, c.w.seq+1)
		start -= len(c.w.seqLine) + len("\n")
		copy(p.b[start:], c.w.seqLine)
		p.b[c.head-1] = '\n'
	}
	if err := c.w.write(p.b[start:]); err != nil {
		c.counters.writeErrors.Add(1)
		c.counters.dropped.Add(uint64(p.lines))
	} else {
		c.w.seq++
		c.counters.packets.Add(1)
		c.counters.bytes.Add(uint64(len(p.b) - start))
		c.counters.lines.Add(uint64(p.lines))
	}
	p.reset(c.head)
	c.free <- p
}

// clientWriter owns the connection; only the sender goroutine uses it.
type clientWriter struct {
	cfg      *ClientConfig
	conn     net.Conn // nil after a failure that needs a new connection
	redialAt time.Time
	final    bool      // closing: deadline no longer moves
	deadline time.Time // of the final writes
	failures uint64    // failed writes since the last warning
	loggedAt time.Time // of the last warning
	seq      uint64    // sequence number of the last packet written
	seqLine  []byte
}

func newClientWriter(c *Client, conn net.Conn) clientWriter {
	return clientWriter{cfg: &c.cfg, conn: conn, seqLine: make([]byte, 0, c.head)}
}

var errClientDisconnected = errors.New("statsd: client not connected")

// write writes one packet, reconnecting first if an earlier failure
// closed the connection.
func (w *clientWriter) write(b []byte) error {
	if w.conn == nil {
		if err := w.redial(); err != nil {
			return w.failed(err)
		}
	}
	deadline := w.deadline
	if !w.final {
		deadline = time.Now().Add(w.cfg.WriteTimeout)
	}
	if err := w.conn.SetWriteDeadline(deadline); err != nil {
		return w.failed(err)
	}
	if _, err := w.conn.Write(b); err != nil {
		if w.needsRedial(err) {
			w.conn.Close()
			w.conn = nil
			w.redialAt = time.Now().Add(w.cfg.WriteTimeout)
		}
		return w.failed(err)
	}
	return nil
}

// needsRedial: after a failed write a stream may hold part of a line, so
// it is replaced; a unix datagram socket whose server went away is
// reconnected (a timeout only means the server is slow). A UDP socket is
// kept: its errors are the ICMP messages of earlier datagrams.
func (w *clientWriter) needsRedial(err error) bool {
	if clientFramingOf(w.cfg.Network) == clientStream {
		return true
	}
	var ne net.Error
	return w.cfg.Network == "unixgram" && !(errors.As(err, &ne) && ne.Timeout())
}

func (w *clientWriter) redial() error {
	now := time.Now()
	if now.Before(w.redialAt) {
		return errClientDisconnected
	}
	w.redialAt = now.Add(w.cfg.WriteTimeout)
	conn, err := net.DialTimeout(w.cfg.Network, w.cfg.Addr, w.cfg.WriteTimeout)
	if err != nil {
		return err
	}
	w.conn = conn
	return nil
}

// clientLogEvery bounds the rate of write failure warnings.
const clientLogEvery = 10 * time.Second

// failed logs err if no failure was logged for clientLogEvery, with the
// number of failures since the last warning.
func (w *clientWriter) failed(err error) error {
	w.failures++
	if now := time.Now(); now.Sub(w.loggedAt) >= clientLogEvery {
		w.cfg.Logger.Warn("statsd client: write failed, packet dropped", "addr", w.cfg.Addr, "err", err, "failures", w.failures)
		w.loggedAt = now
		w.failures = 0
	}
	return err
}

// finish fixes the deadline of the writes left when Close is called.
func (w *clientWriter) finish() {
	w.final = true
	w.deadline = time.Now().Add(w.cfg.WriteTimeout)
}

func (w *clientWriter) close() error {
	if w.conn == nil {
		return nil
	}
	return w.conn.Close()
}
