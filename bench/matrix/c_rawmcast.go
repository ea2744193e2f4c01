package matrix

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"sync/atomic"

	"golang.org/x/net/ipv4"
)

// rawMcast is the multicast baseline: the datagrams our multicast
// transport would send for the message — its data header's 44 bytes and
// at most mcastChunk bytes of payload each, so a message larger than one
// datagram is the same number of datagrams of the same sizes — written
// once to a group on lo (TTL 0) whatever the fan-out. Nothing repaired.
type rawMcast struct{}

const (
	mcastMTU    = 1408 // our multicast transport's default datagram (mtu=)
	mcastHeader = 44   // its data header (reliable: 16 + 28)
	mcastChunk  = mcastMTU - mcastHeader
)

func (rawMcast) Name() string      { return "raw-mcast" }
func (rawMcast) Baseline() string  { return "" }
func (rawMcast) Peer() string      { return "" }
func (rawMcast) Can(Options) error { return loopbackMulticast() }

// groupSeq numbers the groups of this process from a random start.
var groupSeq = func() *atomic.Uint32 {
	var n atomic.Uint32
	n.Store(rand.Uint32())
	return &n
}()

// newGroup is a multicast group and port no other link of this process
// uses: in 239.255.0.0/16 (as the repository's tests), on a port the
// kernel just found free.
func newGroup() (*net.UDPAddr, error) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	port := c.LocalAddr().(*net.UDPAddr).Port
	c.Close()
	n := groupSeq.Add(1)
	return &net.UDPAddr{IP: net.IPv4(239, 255, byte(n>>8), byte(n)), Port: port}, nil
}

func loopbackMulticast() error {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		return fmt.Errorf("%w: no lo interface: %v", ErrUnavailable, err)
	}
	// Linux loops multicast back on lo (IP_MULTICAST_IF 127.0.0.1)
	// whether or not lo has the MULTICAST flag.
	_ = lo
	return nil
}

type rawMcastLink struct {
	pub   *net.UDPConn
	group *net.UDPAddr
	buf   []byte
	subs  []Sub
}

func (rawMcast) Open(_ context.Context, o Options) (Link, error) { return openRawMcast(o, 0) }

// openRawMcast opens the link with multicast TTL ttl: 0, or 1 inside
// the network namespace this benchmark made (rawMcastNS).
func openRawMcast(o Options, ttl int) (Link, error) {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		return nil, err
	}
	g, err := newGroup()
	if err != nil {
		return nil, err
	}
	l := &rawMcastLink{group: g, buf: make([]byte, mcastMTU)}
	if l.pub, err = listenUDP(); err != nil {
		return nil, err
	}
	pc := ipv4.NewPacketConn(l.pub)
	for _, err := range []error{pc.SetMulticastInterface(lo), pc.SetMulticastTTL(ttl), pc.SetMulticastLoopback(true)} {
		if err != nil {
			l.Close()
			return nil, err
		}
	}
	for i := range o.Subscribers {
		c, err := net.ListenMulticastUDP("udp4", lo, g)
		if err != nil {
			l.Close()
			return nil, err
		}
		_ = c.SetReadBuffer(udpSocketBuffer)
		l.subs = append(l.subs, &fragSub{c: c, d: newDropper(o.Loss, o.Seed, i)})
	}
	return l, nil
}

func (l *rawMcastLink) Send(p []byte) error {
	seq, _, _ := unstamp(p)
	n := (len(p) + mcastChunk - 1) / mcastChunk
	for i := range n {
		chunk := p[i*mcastChunk : min(len(p), (i+1)*mcastChunk)]
		binary.LittleEndian.PutUint64(l.buf, seq)
		binary.LittleEndian.PutUint32(l.buf[8:], uint32(i))
		binary.LittleEndian.PutUint32(l.buf[12:], uint32(n))
		m := copy(l.buf[mcastHeader:], chunk)
		if _, err := l.pub.WriteToUDP(l.buf[:mcastHeader+m], l.group); err != nil {
			return err
		}
	}
	return nil
}

func (l *rawMcastLink) Flush() error { return nil }
func (l *rawMcastLink) Subs() []Sub  { return l.subs }

func (l *rawMcastLink) Close() error {
	for _, s := range l.subs {
		s.(*fragSub).c.Close()
	}
	if l.pub == nil {
		return nil
	}
	return l.pub.Close()
}

// fragSub reassembles the fragments of a message, which loopback
// delivers in order; a message missing one is dropped whole.
type fragSub struct {
	c    *net.UDPConn
	d    *dropper
	msg  []byte
	seq  uint64
	next uint32
}

func (s *fragSub) Run(ctx context.Context, fn func([]byte)) error {
	return readLoop(ctx, s.c, func(b []byte) {
		if len(b) < mcastHeader || s.d.drop() {
			return
		}
		seq := binary.LittleEndian.Uint64(b)
		i, n := binary.LittleEndian.Uint32(b[8:]), binary.LittleEndian.Uint32(b[12:])
		if i == 0 {
			s.msg, s.seq, s.next = s.msg[:0], seq, 0
		}
		if seq != s.seq || i != s.next {
			s.next = ^uint32(0) // this message lost a fragment
			return
		}
		s.msg = append(s.msg, b[mcastHeader:]...)
		s.next++
		if s.next == n {
			fn(s.msg)
		}
	})
}

func (s *fragSub) Counts() Counts { return Counts{} }
