package multicast

import (
	"errors"
	"net"
	"net/netip"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/brokerless/brokerless/reliable"
)

// sendLoop hands the engine's datagrams to the kernel, a batch per
// system call, calls the done of the receipts their writing settled, and
// sleeps until woken or the engine's next deadline (heartbeats,
// rate-limited repairs). When it stops, it calls the done of every
// receipt left.
func (p *Publisher) sendLoop() {
	defer p.wg.Done()
	msgs := make([]ipv4.Message, p.cfg.Batch)
	bufs := make([][]byte, p.cfg.Batch)
	for i := range msgs {
		bufs[i] = make([]byte, maxDatagram)
		msgs[i].Buffers = [][]byte{nil}
	}
	upto := make([]uint64, p.cfg.Batch) // the engine's SentNext after each datagram
	errs := make([]error, p.cfg.Batch)  // why the kernel refused each, if it did
	var due []pendingReceipt            // receipts whose done is being called
	stream := p.eng.Stream()
	defer func() {
		p.mu.Lock()
		due = p.rcpt.takeAll(due[:0])
		p.mu.Unlock()
		fire(stream, due)
	}()
	unicast := make([]*net.UDPAddr, p.cfg.Batch)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		p.mu.Lock()
		if p.rcpt.settled > 0 {
			due = p.rcpt.takeSettled(due[:0])
			p.mu.Unlock()
			fire(stream, due)
			continue
		}
		if p.writing {
			// Publish is sending inline; it wakes us if more is left.
			p.idle = true
			p.mu.Unlock()
			if !p.sleep(timer, time.Time{}, time.Time{}) {
				return
			}
			continue
		}
		now := p.cfg.Now()
		nacks := p.eng.Stats().NacksReceived
		p.inbox.drain(func(b []byte, from netip.AddrPort) { _ = p.eng.HandleControl(now, from, b) })
		if p.eng.Stats().NacksReceived != nacks {
			p.lastNack = now // a STATUS is no reason to linger at Close
		}
		n := 0
		for n < len(msgs) {
			l, to, ok := p.eng.NextOutgoing(now, bufs[n])
			if !ok {
				break
			}
			msgs[n].Buffers[0] = bufs[n][:l]
			msgs[n].Addr = p.destination(to, &unicast[n])
			upto[n] = p.eng.SentNext()
			n++
		}
		if n == 0 {
			p.idle = true
			p.madeProgress()
			deadline := p.eng.Deadline(now)
			p.mu.Unlock()
			if !p.sleep(timer, now, deadline) {
				return
			}
			continue
		}
		p.writing = true
		p.mu.Unlock()

		calls, failed := p.write(msgs[:n], errs)

		p.mu.Lock()
		p.writing = false
		p.lastWrite = p.cfg.Now()
		p.stats.SendCalls += calls
		p.stats.SendErrors += failed
		for i := 0; i < n; i++ {
			p.rcpt.settle(upto[i], errs[i])
			errs[i] = nil
		}
		p.madeProgress()
		due = p.rcpt.takeSettled(due[:0])
		p.mu.Unlock()
		fire(stream, due)
	}
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

// write sends msgs, retrying partial batches; it returns the system
// calls made and the datagrams the kernel refused, and sets errs[i] to
// why it refused msgs[i].
func (p *Publisher) write(msgs []ipv4.Message, errs []error) (calls, failed uint64) {
	for i := 0; i < len(msgs); {
		n, err := p.batch.WriteBatch(msgs[i:], 0)
		calls++
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				failed += uint64(len(msgs) - i)
				for ; i < len(msgs); i++ {
					errs[i] = err
				}
				return calls, failed
			}
			p.cfg.Logger.Warn("multicast: send failed", "err", err)
			if n == 0 {
				// The first datagram is the one refused: skip it.
				errs[i] = err
				n = 1
				failed++
			}
		}
		i += n
	}
	return calls, failed
}

// sleep waits for a wake-up, the deadline, or stop; it reports false on
// stop.
func (p *Publisher) sleep(timer *time.Timer, now, deadline time.Time) bool {
	if !deadline.IsZero() {
		timer.Reset(max(deadline.Sub(now), 0))
		defer timer.Stop()
	}
	select {
	case <-p.wake:
	case <-timer.C:
	case <-p.stop:
		return false
	}
	return true
}

// controlLoop reads NACKs from subscribers, a batch per system call, and
// passes them to sendLoop, which answers them when it next takes the
// lock: one wake-up per batch, however many NACKs a flood brings. Its
// buffers hold the longest NACK; anything longer is cut short, and
// refused as no NACK can be.
func (p *Publisher) controlLoop() {
	defer p.wg.Done()
	rb := newReadBatch(p.conn, p.cfg.Batch, reliable.MaxControlLen)
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
