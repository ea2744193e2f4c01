package statsd

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"net"
	"sync/atomic"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// udpReader is one socket (of several sharing a port with SO_REUSEPORT,
// or alone) and the goroutine reading it in batches.
type udpReader struct {
	conn  *net.UDPConn
	inode uint64
	cfg   *Config
	q     *udpQueue // from the reading goroutine to the parsing one
	// ownReads counts the reads the reading goroutine aggregated itself.
	ownReads atomic.Uint64
}

// listenUDP opens cfg.UDPReaders sockets on addr: one plain socket, or
// several sharing the port with SO_REUSEPORT once it is sure that no
// other process receives there (udp_owner.go says why). ours holds the
// inodes of the server's sockets; listenUDP adds those it opens.
func listenUDP(ctx context.Context, addr string, cfg *Config, ours map[uint64]bool) ([]*udpReader, error) {
	shared := cfg.UDPReaders > 1
	want, _ := net.ResolveUDPAddr("udp", addr) // nil if bad: the bind says why
	if shared && want != nil && want.Port != 0 {
		if err := checkUDPAlone(want, ours); err != nil {
			return nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		rs, err := bindUDP(ctx, addr, cfg, shared)
		if errors.Is(err, syscall.EADDRINUSE) {
			e := &AddrInUseError{Network: "udp", Addr: addr}
			if want != nil {
				if s, found, _ := foreignUDP(want, ours); found {
					e.PID = socketOwner(s.inode)
				}
			}
			return nil, e
		}
		if err != nil {
			return nil, err
		}
		mine := maps.Clone(ours)
		for _, r := range rs {
			mine[r.inode] = true
		}
		local := rs[0].conn.LocalAddr().(*net.UDPAddr)
		if shared {
			err = checkUDPAlone(local, mine)
		}
		if err == nil {
			maps.Copy(ours, mine)
			return rs, nil
		}
		for _, r := range rs {
			r.conn.Close()
		}
		// With port 0 and SO_REUSEPORT the kernel may pick a port that
		// another group of the same user holds: pick again.
		if !errors.Is(err, ErrAddrInUse) || want == nil || want.Port != 0 || attempt == 3 {
			return nil, err
		}
	}
}

// checkUDPAlone returns an AddrInUseError if a socket not among ours
// receives on addr.
func checkUDPAlone(addr *net.UDPAddr, ours map[uint64]bool) error {
	s, found, err := foreignUDP(addr, ours)
	switch {
	case err != nil:
		return &ListenError{Network: "udp", Addr: addr.String(), Err: err}
	case found:
		return &AddrInUseError{Network: "udp", Addr: addr.String(), PID: socketOwner(s.inode)}
	}
	return nil
}

// bindUDP opens cfg.UDPReaders sockets on addr, sharing its port when
// shared.
func bindUDP(ctx context.Context, addr string, cfg *Config, shared bool) ([]*udpReader, error) {
	var lc net.ListenConfig
	if shared {
		lc.Control = reusePort
	}
	var out []*udpReader
	for i := 0; i < cfg.UDPReaders; i++ {
		pc, err := lc.ListenPacket(ctx, "udp", addr)
		if err != nil {
			for _, r := range out {
				r.conn.Close()
			}
			return nil, listenError("udp", addr, err)
		}
		c := pc.(*net.UDPConn)
		if i == 0 {
			addr = c.LocalAddr().String() // the others share the chosen port
		}
		r := &udpReader{conn: c, cfg: cfg, inode: socketInode(c), q: newUDPQueue()}
		if cfg.RecvBuffer > 0 {
			_ = c.SetReadBuffer(cfg.RecvBuffer)
			if got := recvBuffer(c); got < cfg.RecvBuffer {
				cfg.Logger.Warn("statsd: kernel clamped the UDP receive buffer; raise net.core.rmem_max",
					"requested", cfg.RecvBuffer, "granted", got)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

func reusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	})
	if err != nil {
		return err
	}
	return serr
}

// recvBuffer reads back SO_RCVBUF: Linux reports twice the usable size.
func recvBuffer(c *net.UDPConn) int {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	var v int
	_ = rc.Control(func(fd uintptr) { v, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) })
	return v / 2
}

// socketInode is the inode of a socket, which names it in
// /proc/net/udp.
func socketInode(c syscall.Conn) uint64 {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	var st unix.Stat_t
	_ = rc.Control(func(fd uintptr) { _ = unix.Fstat(int(fd), &st) })
	return st.Ino
}

// run reads batches of datagrams until the socket is closed and hands
// them to a parsing goroutine, which aggregates them, one lock per
// batch. The reading goroutine mostly only reads and copies: while the
// parser waits for the aggregator (a flush holds it) or parses, the
// socket keeps being drained into the queue, so a pause of the parser
// costs no datagram until the queue is full.
//
// A read that took less than half a batch, while the parser has
// nothing queued and the aggregator is free, is aggregated by the
// reader itself: at such rates the hand-off (waking the parser, often
// on the other core) costs more than the parsing, and the reader is
// back at the socket sooner without it. Order is kept: the reader only
// does so when every slab it queued before has been aggregated.
// It closes r.q.full when it returns.
func (r *udpReader) run(s *Server) {
	q := r.q
	defer s.wg.Done()
	defer close(q.full)
	n := r.cfg.ReadBatch
	ms := make([]ipv4.Message, n)
	bufs := make([]byte, n*r.cfg.MaxDatagram)
	for i := range ms {
		ms[i].Buffers = [][]byte{bufs[i*r.cfg.MaxDatagram : (i+1)*r.cfg.MaxDatagram]}
	}
	read, done, err := newBatchReader(r.conn, ms)
	if err != nil {
		s.counters.readErrors.Add(1)
		return
	}
	defer done()
	r.readLoop(s, "udp "+r.conn.LocalAddr().String(), read, ms)
}

// readLoop is run's loop: read fills ms. A failed read is counted and
// retried after a pause (readFailed, which logs it as what's), until
// read returns net.ErrClosed.
func (r *udpReader) readLoop(s *Server, what string, read func() (int, error), ms []ipv4.Message) {
	q := r.q
	n := len(ms)
	own := newBatch(r.cfg.NoSanitize)
	var backoff readBackoff
	for {
		k, err := read()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.readFailed(&backoff, what, err)
			continue
		}
		backoff.succeeded()
		if k == 0 {
			continue // nothing arrived for a while
		}
		s.counters.datagrams.Add(uint64(k))
		if k < n/2 && q.pending.Load() == 0 && s.mu.TryLock() {
			for i := range k {
				p := datagram(s, &ms[i])
				s.repeat(p)
				own.addPacket(p)
			}
			s.ingestUnlock(own)
			r.ownReads.Add(1)
			continue
		}
		sl := q.get()
		for i := range k {
			p := datagram(s, &ms[i])
			if !sl.fits(len(p)) {
				q.put(sl)
				sl = q.get()
			}
			sl.add(p)
		}
		q.put(sl)
	}
}

// datagram returns what a read put in m: all of it, or its whole lines
// when the kernel cut it short (cutShort).
func datagram(s *Server, m *ipv4.Message) []byte {
	p := m.Buffers[0][:m.N]
	if m.Flags&unix.MSG_TRUNC != 0 {
		p = s.cutShort(p)
	}
	return p
}

// cutShort counts a datagram the kernel cut to the read buffer
// (Truncated) and returns its whole lines: its cut last line would
// parse as another metric, "a:1|c|@0.125" cut to "a:1|c|@0.1" or a tag
// cut short a new series. Etsy reads datagrams of up to 64 KiB whole.
func (s *Server) cutShort(p []byte) []byte {
	s.counters.truncated.Add(1)
	return p[:bytes.LastIndexByte(p, '\n')+1]
}

// parse parses the slabs of r.q and hands them to the aggregator until
// r.q is closed.
func (r *udpReader) parse(s *Server) {
	q := r.q
	defer s.wg.Done()
	b := newBatch(r.cfg.NoSanitize)
	for sl := range q.full {
		start := 0
		for _, end := range sl.ends {
			p := sl.data[start:end]
			start = end
			s.repeat(p)
			b.addPacket(p)
		}
		s.ingest(b) // the batch no longer refers to the slab
		q.done(sl)
	}
}
