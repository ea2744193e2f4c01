//go:build linux

package pipe_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

// feedCapture is a feed as our multicast publisher put it on the wire:
// its DATA datagrams, byte for byte, in order, captured once so that
// replaying them costs the benchmark's machine what a feed from another
// machine costs it — the kernel's path of the datagrams and the
// recorder's work — and not the publisher's work (framing, its window,
// its send goroutine), which belongs to the exchange's machine.
type feedCapture struct {
	stream transport.StreamID
	first  uint64 // sequence number of the first message
	data   []byte // the datagrams back to back
	ends   []int  // datagram i is data[ends[i-1]:ends[i]] (ends[-1] = 0)
	// msgs counts the messages datagrams 0…i complete (a message may
	// begin in one datagram and end in the next: the publisher fills
	// each datagram, fragmenting a message that does not fit).
	msgs []int
	// next is the sequence number (of frames) after datagram i.
	next []uint64
}

// datagram returns datagram i.
func (c *feedCapture) datagram(i int) []byte {
	from := 0
	if i > 0 {
		from = c.ends[i-1]
	}
	return c.data[from:c.ends[i]]
}

// datagrams is how many datagrams the capture holds.
func (c *feedCapture) datagrams() int { return len(c.ends) }

// messages is how many messages the capture holds.
func (c *feedCapture) messages() int {
	if len(c.msgs) == 0 {
		return 0
	}
	return c.msgs[len(c.msgs)-1]
}

// captureFeed publishes n messages (payloads in turn, topic AAPL) with
// a publisher as the live feed's (windowFeedPublisher, whose window of
// window datagrams its DATA headers announce), and returns the DATA
// datagrams it sent, read by a plain UDP socket joined to its group on
// lo (no GRO: one datagram a read). The publisher runs in a tight loop
// (its datagrams leave full, in GSO runs, as at the live feed's high
// rates), held back only so that the capture socket's buffer never
// overflows: a capture with a hole fails the benchmark.
func captureFeed(b testing.TB, payloads [][]byte, n, window int) *feedCapture {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	group := randomBenchGroup()
	conn, err := (&net.ListenConfig{Control: reuseAddr}).ListenPacket(ctx, "udp4", group.String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	uc := conn.(*net.UDPConn)
	_ = uc.SetReadBuffer(4 << 20)
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		b.Fatal(err)
	}
	pc := ipv4.NewPacketConn(uc)
	if err := pc.JoinGroup(lo, &net.UDPAddr{IP: group.Addr().AsSlice()}); err != nil {
		b.Fatal(err)
	}
	c := &feedCapture{}
	var got atomic.Int64 // messages captured
	progress := make(chan struct{}, 1)
	read := make(chan error, 1)
	go func() { read <- c.read(pc, n, &got, progress) }()

	perDatagram := max(1, (reliable.DefaultMTU-40)/(len(payloads[0])+30))
	pub := windowFeedPublisher(b, ctx, group, window, reliable.FlowConfig{})
	defer pub.Close()
	chunk, ahead := 64*perDatagram, 512*perDatagram // the socket's 4 MiB hold ~1,800 datagrams
	deadline := time.Now().Add(2 * time.Minute)
	for sent := 0; sent < n; {
		for int64(sent)-got.Load() > int64(ahead) {
			select {
			case <-progress:
			case err := <-read:
				b.Fatalf("capturing the feed after %d of %d messages: %v", got.Load(), n, err)
			case <-time.After(time.Until(deadline)):
				b.Fatalf("captured %d of %d messages in 2 minutes", got.Load(), n)
			}
		}
		for end := min(n, sent+chunk); sent < end; sent++ {
			if err := pub.Publish(ctx, transport.Message{Topic: "AAPL", Payload: payloads[sent%len(payloads)]}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := pub.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	select {
	case err := <-read:
		if err != nil {
			b.Fatalf("capturing the feed after %d of %d messages: %v", got.Load(), n, err)
		}
	case <-time.After(time.Until(deadline)):
		b.Fatalf("captured %d of %d messages in 2 minutes", got.Load(), n)
	}
	return c
}

func reuseAddr(_, _ string, rc syscall.RawConn) error {
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1) }); err != nil {
		return err
	}
	return serr
}

// read captures the feed's first DATA datagrams, up to n messages,
// checking that each follows the last (no hole, no repair), and
// counts them in got, signalling progress.
func (c *feedCapture) read(pc *ipv4.PacketConn, n int, got *atomic.Int64, progress chan struct{}) error {
	ms := make([]ipv4.Message, 64)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, 2048)}
	}
	var frames []reliable.Frame
	next := uint64(0)
	for c.messages() < n {
		k, err := pc.ReadBatch(ms, 0)
		if err != nil {
			return err
		}
		for _, m := range ms[:k] {
			d := m.Buffers[0][:m.N]
			h, err := reliable.ParseHeader(d)
			if err != nil || h.Type != reliable.TypeData {
				continue // heartbeats: the replay makes its own
			}
			var dh reliable.DataHead
			if dh, frames, err = reliable.ParseData(d, frames); err != nil {
				return fmt.Errorf("a DATA datagram of the feed: %w", err)
			}
			ended := 0
			for _, f := range frames {
				if f.End() {
					ended++
				}
			}
			switch {
			case dh.Repair:
				return errors.New("a repair in the feed: the capture lost a datagram")
			case len(c.ends) == 0:
				c.stream, c.first = h.Stream, dh.FirstSeq
			case h.Stream != c.stream || dh.FirstSeq != next:
				return fmt.Errorf("datagram of %v from %d after %v up to %d: the capture lost a datagram", h.Stream, dh.FirstSeq, c.stream, next-1)
			}
			next = dh.FirstSeq + uint64(dh.Count)
			c.data = append(c.data, d...)
			c.ends = append(c.ends, len(c.data))
			c.msgs = append(c.msgs, c.messages()+ended)
			c.next = append(c.next, next)
		}
		got.Store(int64(c.messages()))
		signal(progress)
	}
	return nil
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// replay sends the capture's first datagrams, those that hold its first
// n messages, to group on lo (TTL 0) paced at rate messages a second,
// open loop as paceFeed: each wake-up sends what is due in one sendmmsg,
// runs of equal-size datagrams as one UDP GSO entry each (as our
// publisher sends them; one datagram an entry when the kernel refuses
// GSO, or when gso is false). It answers NACKs as the publisher's
// window of window datagrams would, with the publisher's default repair
// limits: a datagram sent in the last window goes to the group again,
// its repair flag set, unless it went within the repair linger, at
// most at the repair rate; older ones are announced LOST. Then, until stop is called, a heartbeat every 10 ms
// announces the next sequence number and the window's low edge. It
// returns the rate reached and stop.
func (c *feedCapture) replay(b testing.TB, group netip.AddrPort, rate float64, n, window int, gso bool) (float64, func()) {
	b.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	_ = conn.SetWriteBuffer(4 << 20)
	pc := ipv4.NewPacketConn(conn)
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		conn.Close()
		b.Fatal(err)
	}
	if err := errors.Join(pc.SetMulticastInterface(lo), pc.SetMulticastTTL(0), pc.SetMulticastLoopback(true)); err != nil {
		conn.Close()
		b.Fatal(err)
	}
	to := &net.UDPAddr{IP: group.Addr().AsSlice(), Port: int(group.Port())}
	r := &replayRepairs{c: c, conn: conn, to: to, window: window, repaired: make([]time.Time, len(c.ends)), tokens: reliable.DefaultRepairBurst}
	var wg sync.WaitGroup
	wg.Go(r.serve)
	stop := func() {
		conn.Close()
		wg.Wait()
	}
	last := 0 // datagrams to send: [0, last]
	for last < len(c.msgs)-1 && c.msgs[last] < n {
		last++
	}
	s := &replaySender{c: c, pc: pc, to: to, gso: gso}
	start := time.Now()
	for sent := 0; sent <= last; {
		due := min(n, int(time.Since(start).Seconds()*rate)+1)
		end := sent
		for end <= last && (end == 0 || c.msgs[end-1] < due) {
			end++
		}
		if err := s.send(sent, end); err != nil {
			stop()
			b.Fatal(err)
		}
		sent = end
		r.sent.Store(int64(sent))
		if sent <= last {
			if wait := time.Until(start.Add(time.Duration(float64(c.msgs[sent-1]) / rate * float64(time.Second)))); wait > 0 {
				time.Sleep(max(wait, 500*time.Microsecond)) // pacing the feed, open loop
			}
		}
	}
	reached := float64(c.msgs[last]) / time.Since(start).Seconds()
	beat := reliable.AppendBeat(nil, reliable.TypeHeartbeat, c.stream, reliable.Beat{Next: c.next[last], Low: r.low(last + 1)})
	done := make(chan struct{})
	wg.Go(func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			_, _ = conn.WriteTo(beat, to)
			select {
			case <-t.C:
			case <-done:
				return
			}
		}
	})
	return reached, func() {
		close(done)
		stop()
	}
}

// A DATA datagram's flags byte and its repair flag (package reliable's
// documentation, "DATA"): a repair is the original datagram with the
// flag set.
const (
	dataFlags      = 16
	dataFlagRepair = 0x01
)

// replayRepairs answers the NACKs a replay's receivers send it.
type replayRepairs struct {
	c      *feedCapture
	conn   *net.UDPConn
	to     *net.UDPAddr
	window int          // datagrams
	sent   atomic.Int64 // datagrams sent so far
	// repaired is when each datagram was last sent again; tokens are the
	// repair bytes that may go at once (a token bucket), at tokensAt.
	repaired []time.Time
	tokens   float64
	tokensAt time.Time
}

// spend takes n bytes from the repair budget, waiting for them: the
// publisher's default rate and burst (reliable.DefaultRepairRate and
// DefaultRepairBurst), as its token bucket counts them. What accrues
// while it sleeps is kept (up to the burst): a sleep here lasts longer
// than asked, and the publisher, woken late, sends what accrued
// meanwhile.
func (r *replayRepairs) spend(n int) {
	for {
		now := time.Now()
		if !r.tokensAt.IsZero() {
			r.tokens = min(reliable.DefaultRepairBurst, r.tokens+now.Sub(r.tokensAt).Seconds()*reliable.DefaultRepairRate)
		}
		r.tokensAt = now
		short := float64(n) - r.tokens
		if short <= 0 {
			r.tokens -= float64(n)
			return
		}
		time.Sleep(time.Duration(short / reliable.DefaultRepairRate * float64(time.Second))) // the repair rate
	}
}

// low is the oldest sequence number in the window once sent datagrams
// are sent.
func (r *replayRepairs) low(sent int) uint64 {
	if sent <= r.window {
		return r.c.first
	}
	return r.c.next[sent-r.window-1]
}

// serve answers NACKs until the connection closes.
func (r *replayRepairs) serve() {
	buf := make([]byte, 2048)
	var repair []byte
	for {
		k, _, err := r.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return // closed
		}
		h, err := reliable.ParseHeader(buf[:k])

		if err != nil || h.Type != reliable.TypeNack || h.Stream != r.c.stream {
			continue // STATUS: no flow control here
		}
		rs, err := reliable.ParseRanges(buf[:k])
		if err != nil {
			continue
		}
		sent := int(r.sent.Load())
		low := r.low(sent)
		var lost, coming []reliable.Range
		for i := range rs.Len() {
			g := rs.At(i)
			if g.From < low {
				lost = append(lost, reliable.Range{From: g.From, To: min(g.To, low-1)})
				g.From = low
			}
			if sent > 0 && g.From <= g.To && g.From < r.c.next[sent-1] {
				coming = append(coming, reliable.Range{From: g.From, To: min(g.To, r.c.next[sent-1]-1)})
			}
		}
		if len(coming) > 0 {
			// The NCF first, as the publisher's goes out ahead of its
			// repairs: it tells the subscriber the NACK was heard, so
			// that it waits one round trip before asking again rather
			// than doubling its wait each time (an unanswered NACK).
			_, _ = r.conn.WriteTo(reliable.AppendRanges(nil, reliable.TypeNcf, r.c.stream, coming), r.to)
		}
		for i := range rs.Len() {
			g := rs.At(i)
			g.From = max(g.From, low)
			// The datagrams holding g.From…g.To, of those sent.
			first, _ := slices.BinarySearch(r.c.next[:sent], g.From+1)
			for j := first; j < sent && g.From <= g.To; j++ {
				g.From = r.c.next[j]
				if now := time.Now(); now.Sub(r.repaired[j]) < reliable.DefaultRepairLinger {
					continue // it went again just now: the NACK crossed it
				}
				r.spend(len(r.c.datagram(j)))
				r.repaired[j] = time.Now()
				repair = append(repair[:0], r.c.datagram(j)...)
				repair[dataFlags] |= dataFlagRepair
				_, _ = r.conn.WriteTo(repair, r.to)
			}
		}
		if len(lost) > 0 {
			_, _ = r.conn.WriteTo(reliable.AppendRanges(nil, reliable.TypeLost, r.c.stream, lost), r.to)
		}
	}
}

// replaySender sends runs of a capture's datagrams with sendmmsg.
type replaySender struct {
	c     *feedCapture
	pc    *ipv4.PacketConn
	to    net.Addr
	gso   bool
	ms    []ipv4.Message
	oob   [][]byte // the entries' control messages (GSO segment size)
	count []int    // the entries' datagrams
}

// Bounds of one UDP GSO send: the kernel's UDP_MAX_SEGMENTS, and one
// IPv4 datagram's payload.
const (
	gsoSegments = 64
	gsoBytes    = 65507
)

// send sends datagrams [from, to), at most 256 a system call.
func (s *replaySender) send(from, to int) error {
	for from < to {
		s.ms = s.ms[:0]
		at := from
		for at < to && len(s.ms) < 8 && at-from < 256 {
			end := at + 1
			size := len(s.c.datagram(at))
			if s.gso {
				for end < to && end-at < gsoSegments && len(s.c.datagram(end)) <= size && s.c.ends[end]-s.c.ends[at]+size <= gsoBytes {
					end++
					if len(s.c.datagram(end-1)) < size {
						break // a shorter one ends a run
					}
				}
			}
			s.add(at, end, size)
			at = end
		}
		n, err := s.pc.WriteBatch(s.ms, 0)
		if err != nil && n <= 0 {
			if s.gso && s.ms[0].OOB != nil && (errors.Is(err, unix.EIO) || errors.Is(err, unix.EINVAL)) {
				s.gso = false // the kernel refuses GSO here: a datagram an entry
				continue
			}
			return fmt.Errorf("replaying the feed: %w", err)
		}
		for _, k := range s.count[:n] {
			from += k
		}
	}
	return nil
}

// add adds to the batch the entry of datagrams [from, to), all of size
// bytes but the last: one GSO run when it holds more than one.
func (s *replaySender) add(from, to, size int) {
	k := len(s.ms)
	if k == len(s.oob) {
		s.oob = append(s.oob, make([]byte, unix.CmsgSpace(2)))
		s.count = append(s.count, 0)
	}
	at := 0
	if from > 0 {
		at = s.c.ends[from-1]
	}
	m := ipv4.Message{Buffers: [][]byte{s.c.data[at:s.c.ends[to-1]]}, Addr: s.to}
	if to-from > 1 {
		b := s.oob[k]
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
		h.SetLen(unix.CmsgLen(2))
		binary.NativeEndian.PutUint16(b[unix.CmsgLen(0):], uint16(size))
		m.OOB = b
	}
	s.ms = append(s.ms, m)
	s.count[k] = to - from
}
