package matrix

import (
	"context"
	"errors"
	"fmt"

	pebbe "github.com/pebbe/zmq4"
)

// libzmqTCP is libzmq (Debian's libzmq3-dev, through the cgo binding
// github.com/pebbe/zmq4): a PUB socket bound on loopback TCP, a SUB
// socket per subscriber, two frames per message (topic, payload), the
// default high-water marks (1000 messages, as ours). libzmq numbers
// nothing: what it drops, and what the subscriber drops on purpose, is
// silent.
type libzmqTCP struct{}

func (libzmqTCP) Name() string      { return "libzmq-tcp" }
func (libzmqTCP) Baseline() string  { return "raw-tcp" }
func (libzmqTCP) Peer() string      { return "" }
func (libzmqTCP) Can(Options) error { return nil }

func (libzmqTCP) Open(_ context.Context, o Options) (Link, error) {
	return openLibzmq(o, func(pub *pebbe.Socket) (string, error) {
		if err := pub.Bind("tcp://127.0.0.1:*"); err != nil {
			return "", err
		}
		return pub.GetLastEndpoint()
	})
}

// libzmqEPGM is libzmq's PGM reliable multicast (epgm://, PGM over UDP,
// OpenPGM), the peer of our multicast: publisher and subscribers
// connect to a group through 127.0.0.1, at 1 Gbit/s (ZMQ_RATE; the
// default is 100 kbit/s). libzmq refuses a multicast TTL of 0
// (ZMQ_MULTICAST_HOPS), so it runs with TTL 1 inside a network
// namespace this benchmark makes and deletes (netns.go), where nothing
// leaves the machine; its baseline is raw multicast in the same
// namespace.
type libzmqEPGM struct{}

func (libzmqEPGM) Name() string      { return "libzmq-epgm" }
func (libzmqEPGM) Baseline() string  { return "raw-mcast-ns" }
func (libzmqEPGM) Peer() string      { return "" }
func (libzmqEPGM) Can(Options) error { return netnsAvailable() }
func (libzmqEPGM) inNetns()          {}

func (libzmqEPGM) Open(_ context.Context, o Options) (Link, error) {
	if err := insideOurNetns(); err != nil {
		return nil, err
	}
	g, err := newGroup()
	if err != nil {
		return nil, err
	}
	ep := fmt.Sprintf("epgm://127.0.0.1;%s", g)
	return openLibzmq(o, func(pub *pebbe.Socket) (string, error) {
		for _, err := range []error{pub.SetMulticastHops(1), pub.SetRate(1_000_000), pub.Connect(ep)} {
			if err != nil {
				return "", err
			}
		}
		return ep, nil
	})
}

type libzmqLink struct {
	pub  *pebbe.Socket
	subs []Sub
}

// openLibzmq makes the PUB socket, sets it up with listen (which
// returns the endpoint subscribers connect to), and the SUB sockets.
func openLibzmq(o Options, listen func(*pebbe.Socket) (string, error)) (Link, error) {
	l := &libzmqLink{}
	var err error
	if l.pub, err = pebbe.NewSocket(pebbe.PUB); err != nil {
		return nil, err
	}
	_ = l.pub.SetLinger(0)
	ep, err := listen(l.pub)
	if err != nil {
		l.Close()
		return nil, err
	}
	for i := range o.Subscribers {
		s, err := pebbe.NewSocket(pebbe.SUB)
		if err != nil {
			l.Close()
			return nil, err
		}
		l.subs = append(l.subs, &libzmqSub{s: s, d: newDropper(o.Loss, o.Seed, i)})
		for _, err := range []error{s.SetLinger(0), s.SetRcvtimeo(pollEvery), s.SetSubscribe(zmqTopic), s.Connect(ep)} {
			if err != nil {
				l.Close()
				return nil, err
			}
		}
	}
	return l, nil
}

var zmqTopicBytes = []byte(zmqTopic)

func (l *libzmqLink) Send(p []byte) error {
	if _, err := l.pub.SendBytes(zmqTopicBytes, pebbe.SNDMORE); err != nil {
		return err
	}
	_, err := l.pub.SendBytes(p, 0)
	return err
}

func (l *libzmqLink) Flush() error { return nil }
func (l *libzmqLink) Subs() []Sub  { return l.subs }

func (l *libzmqLink) Close() error {
	for _, s := range l.subs {
		s.(*libzmqSub).s.Close()
	}
	if l.pub != nil {
		return l.pub.Close()
	}
	return nil
}

type libzmqSub struct {
	s *pebbe.Socket
	d *dropper
}

// Run reads topic and payload frames; the receive timeout (pollEvery)
// lets it see ctx's end. The timeout can come between the two frames
// too (seen with epgm), so each read goes on after it.
func (s *libzmqSub) Run(ctx context.Context, fn func([]byte)) error {
	for ctx.Err() == nil {
		if _, err := s.recv(ctx); err != nil {
			return err
		}
		p, err := s.recv(ctx)
		if err != nil {
			return err
		}
		if p != nil && !s.d.drop() {
			fn(p)
		}
	}
	return nil
}

// recv reads one frame, going on after receive timeouts; nil, nil once
// ctx has ended.
func (s *libzmqSub) recv(ctx context.Context) ([]byte, error) {
	for {
		b, err := s.s.RecvBytes(0)
		switch {
		case err == nil:
			return b, nil
		case ctx.Err() != nil:
			return nil, nil
		case errors.Is(pebbe.AsErrno(err), pebbe.Errno(11)): // EAGAIN: the timeout
		default:
			return nil, err
		}
	}
}

func (s *libzmqSub) Counts() Counts { return Counts{} }
