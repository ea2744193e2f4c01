package matrix

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/nats-io/nats.go"
)

// natsCore is NATS core pub/sub: the server embedded in this process
// (nats-server v2), the Go client (nats.go) with its defaults, a
// connection for the publisher and one per subscriber. Nothing is
// stored or repaired; a subscriber that falls behind its pending limits
// drops, and the client counts it (reported as gaps here).
type natsCore struct {
	servers natsServers
	subj    atomic.Uint64
}

func (*natsCore) Name() string     { return "nats" }
func (*natsCore) Baseline() string { return "raw-tcp" }
func (*natsCore) Peer() string     { return "" }

func (*natsCore) Can(o Options) error {
	if o.Loss > 0 {
		return errTCPLoss
	}
	return nil
}

func (c *natsCore) Close() error { return c.servers.Close() }

type natsLink struct {
	pub   *nats.Conn
	conns []*nats.Conn
	subj  string
	subs  []Sub
}

func (c *natsCore) Open(_ context.Context, o Options) (Link, error) {
	s, err := c.servers.get("core")
	if err != nil {
		return nil, err
	}
	l := &natsLink{subj: fmt.Sprintf("bench.%d", c.subj.Add(1))}
	if l.pub, err = nats.Connect(s.ClientURL()); err != nil {
		return nil, err
	}
	l.conns = append(l.conns, l.pub)
	for range o.Subscribers {
		nc, err := nats.Connect(s.ClientURL())
		if err != nil {
			l.Close()
			return nil, err
		}
		l.conns = append(l.conns, nc)
		cs := &callbackSub{}
		sub, err := nc.Subscribe(l.subj, func(m *nats.Msg) { cs.deliver(m.Data) })
		if err != nil {
			l.Close()
			return nil, err
		}
		cs.dropped = func() uint64 { n, _ := sub.Dropped(); return uint64(max(n, 0)) }
		if err := nc.Flush(); err != nil { // the server has the subscription
			l.Close()
			return nil, err
		}
		l.subs = append(l.subs, cs)
	}
	return l, nil
}

// Send: the client buffers and its own goroutine flushes.
func (l *natsLink) Send(p []byte) error { return l.pub.Publish(l.subj, p) }
func (l *natsLink) Flush() error        { return nil }
func (l *natsLink) Subs() []Sub         { return l.subs }

func (l *natsLink) Close() error {
	for _, nc := range l.conns {
		nc.Close()
	}
	return nil
}
