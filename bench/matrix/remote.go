package matrix

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/brokerless/brokerless/transport"
)

// remote is a contender that runs across two machines (bench run
// --role pub|sub): a publisher on one, a subscriber on the other.
type remote interface {
	// SubListens: the subscriber listens and the publisher connects to
	// it (UDP, TCP); otherwise the publisher listens (ZeroMQ's PUB).
	SubListens() bool
	// OpenPub opens a publisher with no subscribers of its own: when it
	// listens, on host (it returns the address it listens on); when it
	// connects, to addr (it returns "").
	OpenPub(ctx context.Context, o Options, addr string) (Link, string, error)
	// OpenSub opens one subscriber the same way.
	OpenSub(ctx context.Context, o Options, addr string) (Sub, io.Closer, string, error)
}

// notRemote says why c does not run in two-machine mode.
func notRemote(c Contender) string {
	if strings.HasPrefix(c.Name(), "raw-mcast") || strings.HasPrefix(c.Baseline(), "raw-mcast") {
		return "not available in two-machine mode: this benchmark sends multicast only with TTL 0 (or 1 inside a network namespace of its own), which never leaves the machine"
	}
	return "not available in two-machine mode: its server, publisher and subscribers start in one process here"
}

func hostAddr(host string) string { return net.JoinHostPort(host, "0") }

// raw UDP: the subscriber's socket listens; the publisher writes to it.

func (rawUDP) SubListens() bool { return true }

func (rawUDP) OpenPub(_ context.Context, _ Options, addr string) (Link, string, error) {
	to, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, "", err
	}
	c, err := net.ListenUDP("udp", nil)
	if err != nil {
		return nil, "", err
	}
	_ = c.SetWriteBuffer(4 << 20)
	return &rawUDPLink{pub: c, to: []*net.UDPAddr{to}}, "", nil
}

func (rawUDP) OpenSub(_ context.Context, o Options, host string) (Sub, io.Closer, string, error) {
	a, err := net.ResolveUDPAddr("udp", hostAddr(host))
	if err != nil {
		return nil, nil, "", err
	}
	c, err := net.ListenUDP("udp", a)
	if err != nil {
		return nil, nil, "", err
	}
	_ = c.SetReadBuffer(4 << 20)
	return &udpSub{c: c, d: newDropper(o.Loss, o.Seed, 0)}, c, c.LocalAddr().String(), nil
}

// raw TCP: the subscriber listens and takes one connection.

func (rawTCP) SubListens() bool { return true }

func (rawTCP) OpenPub(ctx context.Context, _ Options, addr string) (Link, string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, "", err
	}
	return &rawTCPLink{ws: []*bufio.Writer{bufio.NewWriterSize(c, 64<<10)}, conns: []net.Conn{c}}, "", nil
}

func (rawTCP) OpenSub(_ context.Context, _ Options, host string) (Sub, io.Closer, string, error) {
	ln, err := net.Listen("tcp", hostAddr(host))
	if err != nil {
		return nil, nil, "", err
	}
	return &acceptSub{ln: ln}, ln, ln.Addr().String(), nil
}

// acceptSub is a raw TCP subscriber that waits for its one connection.
type acceptSub struct{ ln net.Listener }

func (s *acceptSub) Run(ctx context.Context, fn func([]byte)) error {
	stop := context.AfterFunc(ctx, func() { s.ln.Close() })
	defer stop()
	c, err := s.ln.Accept()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	s.ln.Close()
	defer c.Close()
	return (&tcpSub{c: c}).Run(ctx, fn)
}

func (s *acceptSub) Counts() Counts { return Counts{} }

// our ZeroMQ transport: the publisher binds (zmq+tcp://HOST:PORT), the
// subscriber connects.

func (zmqOurs) SubListens() bool { return false }

func (zmqOurs) OpenPub(ctx context.Context, _ Options, host string) (Link, string, error) {
	ln, err := net.Listen("tcp", hostAddr(host))
	if err != nil {
		return nil, "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	u := "zmq+tcp://" + addr
	l, err := openURL(ctx, u, nil, false, nil)
	if err != nil {
		return nil, "", err
	}
	l.topic = zmqTopic
	return l, u, nil
}

func (zmqOurs) OpenSub(ctx context.Context, o Options, u string) (Sub, io.Closer, string, error) {
	u += "?subscribe=" + zmqTopic
	if o.Loss > 0 {
		u += fmt.Sprintf("&loss=%g&seed=%d", o.Loss, o.Seed)
	}
	s, err := transport.OpenSubscriber(ctx, u)
	if err != nil {
		return nil, nil, "", err
	}
	return &urlSub{s: s}, s, "", nil
}
