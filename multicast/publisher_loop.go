package multicast

import (
	"errors"
	"net"
	"net/netip"
	"time"

	"golang.org/x/net/ipv4"
)

// sendRound is the scratch of one round of writing: the datagrams
// taken from the engine, their destinations, the engine's SentNext after
// each, why the kernel refused each, and the sendmmsg entries. Only the
// holder of Publisher.writing uses it: sendLoop, or a Publish call that
// found no write in flight.
type sendRound struct {
	bufs   [][]byte
	dgrams [][]byte
	dst    []netip.AddrPort
	upto   []uint64
	errs   []error
	w      *sendBatch
}

func newSendRound(gather, mtu int) *sendRound {
	r := &sendRound{
		bufs:   make([][]byte, gather),
		dgrams: make([][]byte, gather),
		dst:    make([]netip.AddrPort, gather),
		upto:   make([]uint64, gather),
		errs:   make([]error, gather),
		w:      newSendBatch(gather),
	}
	for i := range r.bufs {
		r.bufs[i] = make([]byte, mtu)
	}
	return r
}

// take answers the NACKs and STATUS waiting in the inbox, then takes up
// to limit datagrams (at most a round's) from the engine, in the
// engine's order (control and repairs before unsent data), and returns
// how many, and whether it answered any control datagram. With any
// datagram, it sets p.writing: the caller must then call put. p.mu is
// held.
func (p *Publisher) take(now time.Time, limit int) (n int, control bool) {
	r := p.round
	nacks := p.eng.Stats().NacksReceived
	control = p.inbox.drain(func(b []byte, from netip.AddrPort) { _ = p.eng.HandleControl(now, from, b) }) > 0
	if p.eng.Stats().NacksReceived != nacks {
		p.lastNack = now // a STATUS is no reason to linger at Close
	}
	for n < min(limit, len(r.bufs)) {
		l, to, ok := p.eng.NextOutgoing(now, r.bufs[n])
		if !ok {
			break
		}
		r.dgrams[n], r.dst[n] = r.bufs[n][:l], to
		r.upto[n] = p.eng.SentNext()
		n++
	}
	if n > 0 {
		p.writing = true
	}
	return n, control
}

// put writes the n datagrams take took, with p.mu released, then
// settles their receipts and wakes waiters, and returns when the write
// ended. p.mu is held on entry and exit.
func (p *Publisher) put(n int) time.Time {
	r := p.round
	p.mu.Unlock()
	calls, failed, runs := p.write(r.w, r.dgrams[:n], r.dst[:n], r.errs)
	end := p.cfg.Now()
	p.mu.Lock()
	p.writing = false
	p.stats.SendCalls += calls
	p.stats.SendErrors += failed
	p.stats.GSO = p.gso
	p.stats.GSORuns += runs
	for i := 0; i < n; i++ {
		p.rcpt.settle(r.upto[i], r.errs[i])
		r.errs[i] = nil
	}
	p.madeProgress()
	return end
}

// sendLoop hands the engine's datagrams to the kernel, a batch per
// system call (runs of equal-size datagrams as one UDP GSO entry each,
// when the kernel takes them), when no Publish call is writing them
// itself; calls the done of the receipts their writing settled; and
// sleeps until woken or the engine's next deadline (heartbeats,
// rate-limited repairs). When it stops, it calls the done of every
// receipt left.
func (p *Publisher) sendLoop() {
	defer p.wg.Done()
	var due []pendingReceipt // receipts whose done is being called
	stream := p.eng.Stream()
	defer func() {
		p.mu.Lock()
		due = p.rcpt.takeAll(due[:0])
		p.mu.Unlock()
		fire(stream, due)
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	timedOut := false // the last sleep ended at the engine's deadline
	for {
		p.mu.Lock()
		if p.rcpt.settled > 0 {
			due = p.rcpt.takeSettled(due[:0])
			p.mu.Unlock()
			fire(stream, due)
			continue
		}
		if p.writing {
			// A Publish call is writing; it wakes us if more is left.
			p.idle = true
			now := p.cfg.Now()
			deadline := p.eng.Deadline(now)
			p.mu.Unlock()
			ok := false
			if ok, timedOut = p.sleep(timer, now, deadline); !ok {
				return
			}
			continue
		}
		now := p.cfg.Now()
		n, control := p.take(now, len(p.round.bufs))
		if n == 0 {
			p.idle = true
			// Nothing to send. Waiters are woken only for what may let
			// them on: a STATUS or NACK answered (flow control may have
			// moved), the engine's deadline (a receiver expired), or,
			// for a Flush, the engine idle. Woken for nothing, a Publish
			// held by flow control signalled this loop, which woke it,
			// which was held again…: the two took turns as fast as the
			// scheduler ran them, each turn handing the next its time
			// slice, and starved the process's other goroutines for
			// hundreds of milliseconds (a recorder's pipe with flow
			// control: TestFlowHeldSleeps).
			if control || timedOut || p.flushers > 0 && p.eng.Idle() {
				p.madeProgress()
			}
			deadline := p.eng.Deadline(now)
			p.mu.Unlock()
			ok := false
			if ok, timedOut = p.sleep(timer, now, deadline); !ok {
				return
			}
			continue
		}
		timedOut = false
		p.put(n)
		due = p.rcpt.takeSettled(due[:0])
		p.mu.Unlock()
		fire(stream, due)
	}
}

// gsoGather is how many times Config.Batch datagrams sendLoop takes
// from the engine per system call when it sends with GSO: a batch entry
// then carries a run of datagrams, not one.
const gsoGather = 8

// sendBatch is sendLoop's scratch for one sendmmsg: its entries, the
// index of each entry's first datagram, their control messages (the
// GSO segment size) and unicast addresses.
type sendBatch struct {
	msgs    []ipv4.Message
	first   []int
	oob     [][]byte
	unicast []*net.UDPAddr
}

func newSendBatch(gather int) *sendBatch {
	w := &sendBatch{
		msgs:    make([]ipv4.Message, gather),
		first:   make([]int, gather+1),
		oob:     make([][]byte, gather),
		unicast: make([]*net.UDPAddr, gather),
	}
	for i := range w.oob {
		w.oob[i] = segmentCmsg(0)
	}
	return w
}

// fill makes entries of the datagrams d to destinations dst, runs of
// equal-size group datagrams as one GSO entry each when gso is set (a
// shorter one may end a run), and returns how many.
func (w *sendBatch) fill(p *Publisher, d [][]byte, dst []netip.AddrPort, gso bool) int {
	k := 0
	for i := 0; i < len(d); k++ {
		j := i + 1
		m := &w.msgs[k]
		m.OOB = nil
		if gso && !dst[i].IsValid() {
			size, total := len(d[i]), len(d[i])
			for j < len(d) && j-i < gsoMaxSegments && !dst[j].IsValid() && len(d[j]) <= size && total+len(d[j]) <= gsoMaxBytes {
				total += len(d[j])
				j++
				if len(d[j-1]) < size {
					break
				}
			}
			if j-i > 1 {
				putSegment(w.oob[k], size)
				m.OOB = w.oob[k]
			}
		}
		m.Buffers = d[i:j]
		m.Addr = p.destination(dst[i], &w.unicast[k])
		w.first[k] = i
		i = j
	}
	w.first[k] = len(d)
	return k
}

// destination is the group, or the receiver a unicast repair is for.
func (p *Publisher) destination(to netip.AddrPort, slot **net.UDPAddr) net.Addr {
	if !to.IsValid() {
		return p.group
	}
	if *slot == nil {
		*slot = new(net.UDPAddr)
	}
	(*slot).IP = to.Addr().AsSlice()
	(*slot).Port = int(to.Port())
	return *slot
}

// write sends the datagrams d to dst, retrying partial batches; it
// returns the system calls made, the datagrams the kernel refused and
// the GSO runs sent, and sets errs[i] to why it refused d[i]. When the
// kernel refuses segmentation itself (gsoRefused: EIO, EINVAL …), GSO
// is off from then on and the rest goes one datagram per entry.
func (p *Publisher) write(w *sendBatch, d [][]byte, dst []netip.AddrPort, errs []error) (calls, failed, runs uint64) {
	k := w.fill(p, d, dst, p.gso)
	for i := 0; i < k; {
		n, err := p.writeBatch(w.msgs[i:k], 0)
		calls++
		n = max(n, 0) // sendmmsg's -1 on error
		for _, m := range w.msgs[i : i+n] {
			if m.OOB != nil {
				runs++
			}
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				for j := w.first[i+n]; j < len(d); j++ {
					errs[j] = err
				}
				return calls, failed + uint64(len(d)-w.first[i+n]), runs
			}
			if n == 0 && w.msgs[i].OOB != nil && gsoRefused(err) {
				// The kernel refused GSO: send the rest, this run
				// included, a datagram per entry. A shortage
				// (ENOBUFS, EAGAIN) fails the run as it would fail
				// its datagrams one by one, and leaves GSO on.
				p.cfg.Logger.Warn("multicast: UDP GSO send failed; sending one datagram per entry", "err", err)
				p.gso = false
				from := w.first[i]
				c, f, _ := p.write(w, d[from:], dst[from:], errs[from:])
				return calls + c, failed + f, runs
			}
			p.cfg.Logger.Warn("multicast: send failed", "err", err)
			if n == 0 {
				// The first entry is the one refused: skip it.
				for j := w.first[i]; j < w.first[i+1]; j++ {
					errs[j] = err
				}
				failed += uint64(w.first[i+1] - w.first[i])
				n = 1
			}
		}
		i += n
	}
	return calls, failed, runs
}

// sleep waits for a wake-up, the deadline, or stop; it reports false on
// stop, and whether the deadline ended it.
func (p *Publisher) sleep(timer *time.Timer, now, deadline time.Time) (ok, timedOut bool) {
	if !deadline.IsZero() {
		timer.Reset(max(deadline.Sub(now), 0))
		defer timer.Stop()
	}
	select {
	case <-p.wake:
		return true, false
	case <-timer.C:
		return true, true
	case <-p.stop:
		return false, false
	}
}

// controlLoop reads NACKs from subscribers, a batch per system call, and
// passes them to sendLoop, which answers them when it next takes the
// lock: one wake-up per batch, however many NACKs a flood brings. Its
// buffers hold the longest NACK; anything longer is cut short, and
// refused as no NACK can be.
func (p *Publisher) controlLoop(rb *readBatch) {
	defer p.wg.Done()
	for {
		n, err := rb.read()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			p.mu.Lock()
			p.stats.ReadErrors++
			p.mu.Unlock()
			continue
		}
		for i := 0; i < n; i++ {
			p.inbox.put(rb.datagram(i))
		}
		p.signal()
	}
}
