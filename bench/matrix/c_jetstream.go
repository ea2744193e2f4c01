package matrix

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jetStream is NATS JetStream with file storage, the durable peer of
// logd: the server embedded (fsync before acknowledging with
// durability on, as logd's FsyncAlways; JetStream's default 2-minute
// fsync interval off), a stream per link, PublishAsync (acknowledged
// publishes, at most 4000 in flight: the client's default), and per
// subscriber an ordered consumer from the stream's start (no acks), as
// logd's subscribers read without a group.
type jetStream struct {
	servers natsServers
	n       atomic.Uint64
}

func (*jetStream) Name() string     { return "jetstream" }
func (*jetStream) Baseline() string { return "raw-tcp" }
func (*jetStream) Peer() string     { return "" }
func (*jetStream) Stores() bool     { return true }

func (*jetStream) Can(o Options) error {
	if o.Loss > 0 {
		return errTCPLoss
	}
	return nil
}

func (c *jetStream) Close() error { return c.servers.Close() }

type jsLink struct {
	ctx    context.Context
	stop   context.CancelFunc
	nc     *nats.Conn
	js     jetstream.JetStream
	subj   string
	stream string
	conns  []*nats.Conn
	ccs    []jetstream.ConsumeContext
	subs   []Sub
}

func (c *jetStream) Open(ctx context.Context, o Options) (Link, error) {
	kind := "js"
	if o.Durable {
		kind = "js-fsync"
	}
	s, err := c.servers.get(kind)
	if err != nil {
		return nil, err
	}
	n := c.n.Add(1)
	lctx, stop := context.WithCancel(context.Background())
	l := &jsLink{ctx: lctx, stop: stop, subj: fmt.Sprintf("js.%d", n), stream: fmt.Sprintf("B%d", n)}
	if l.nc, err = nats.Connect(s.ClientURL()); err != nil {
		stop()
		return nil, err
	}
	l.conns = append(l.conns, l.nc)
	if l.js, err = jetstream.New(l.nc); err != nil {
		l.Close()
		return nil, err
	}
	if _, err := l.js.CreateStream(ctx, jetstream.StreamConfig{Name: l.stream, Subjects: []string{l.subj}, Storage: jetstream.FileStorage}); err != nil {
		l.Close()
		return nil, err
	}
	for range o.Subscribers {
		nc, err := nats.Connect(s.ClientURL())
		if err != nil {
			l.Close()
			return nil, err
		}
		l.conns = append(l.conns, nc)
		js, err := jetstream.New(nc)
		if err != nil {
			l.Close()
			return nil, err
		}
		cons, err := js.OrderedConsumer(ctx, l.stream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
		if err != nil {
			l.Close()
			return nil, err
		}
		cs := &callbackSub{}
		cc, err := cons.Consume(func(m jetstream.Msg) { cs.deliver(m.Data()) })
		if err != nil {
			l.Close()
			return nil, err
		}
		l.ccs = append(l.ccs, cc)
		l.subs = append(l.subs, cs)
	}
	return l, nil
}

// Send publishes without waiting for the acknowledgement; once 4000 are
// in flight the client stalls for up to 200 ms and then refuses
// (ErrTooManyStalledMsgs): Send then waits for the acknowledgements and
// tries again, a publisher blocked as logd's is when its buffer is full.
func (l *jsLink) Send(p []byte) error {
	for {
		_, err := l.js.PublishAsync(l.subj, p)
		if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			return err
		}
		select {
		case <-l.js.PublishAsyncComplete():
		case <-time.After(time.Second):
		}
	}
}

func (l *jsLink) Flush() error { return nil }
func (l *jsLink) Subs() []Sub  { return l.subs }

func (l *jsLink) Close() error {
	for _, cc := range l.ccs {
		cc.Stop()
	}
	if l.js != nil {
		select {
		case <-l.js.PublishAsyncComplete():
		case <-time.After(5 * time.Second):
		}
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = l.js.DeleteStream(dctx, l.stream)
		cancel()
	}
	for _, nc := range l.conns {
		nc.Close()
	}
	l.stop()
	return nil
}
