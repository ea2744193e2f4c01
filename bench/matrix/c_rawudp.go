package matrix

import (
	"context"
	"fmt"
	"net"
)

// rawUDP is the unicast baseline: one datagram per message, written to
// each subscriber's socket in turn (fan-out costs a write per
// subscriber), and nothing repaired.
type rawUDP struct{}

func (rawUDP) Name() string     { return "raw-udp" }
func (rawUDP) Baseline() string { return "" }
func (rawUDP) Peer() string     { return "" }

// maxDatagram is the largest UDP payload over IPv4.
const maxDatagram = 65507

func (rawUDP) Can(o Options) error {
	if o.Size > maxDatagram {
		return fmt.Errorf("%w: a UDP datagram holds at most %d bytes", ErrNotApplicable, maxDatagram)
	}
	return nil
}

type rawUDPLink struct {
	pub  *net.UDPConn
	to   []*net.UDPAddr
	subs []Sub
}

func (rawUDP) Open(_ context.Context, o Options) (Link, error) {
	l := &rawUDPLink{}
	var err error
	if l.pub, err = listenUDP(); err != nil {
		return nil, err
	}
	for i := range o.Subscribers {
		c, err := listenUDP()
		if err != nil {
			l.Close()
			return nil, err
		}
		l.to = append(l.to, c.LocalAddr().(*net.UDPAddr))
		l.subs = append(l.subs, &udpSub{c: c, d: newDropper(o.Loss, o.Seed, i)})
	}
	return l, nil
}

func (l *rawUDPLink) Send(p []byte) error {
	for _, a := range l.to {
		if _, err := l.pub.WriteToUDP(p, a); err != nil {
			return err
		}
	}
	return nil
}

func (l *rawUDPLink) Flush() error { return nil }
func (l *rawUDPLink) Subs() []Sub  { return l.subs }

func (l *rawUDPLink) Close() error {
	for _, s := range l.subs {
		s.(*udpSub).c.Close()
	}
	return l.pub.Close()
}

// udpSub receives one message per datagram.
type udpSub struct {
	c *net.UDPConn
	d *dropper
}

func (s *udpSub) Run(ctx context.Context, fn func([]byte)) error {
	return readLoop(ctx, s.c, func(b []byte) {
		if !s.d.drop() {
			fn(b)
		}
	})
}

func (s *udpSub) Counts() Counts { return Counts{} }

// Sustained: raw UDP is the StatsD servers' baseline, probed as long.
func (rawUDP) Sustained() bool { return true }
