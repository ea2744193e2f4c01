package matrix

import (
	"context"
	"errors"
	"net"
	"sync/atomic"

	"github.com/brokerless/brokerless/transport"
)

// urlLink is a transport of ours opened through its URLs (the contract
// every transport implements): one publisher, and one subscriber per
// Options.Subscribers.
type urlLink struct {
	ctx  context.Context
	stop context.CancelFunc
	pub  transport.Publisher
	subs []Sub
	copy bool
	// topic is every message's Topic: a ZeroMQ subscription prefix; for
	// logd, empty (a Topic would override the URL's).
	topic string
}

// openURL opens pubURL's publisher and one subscriber per subURLs
// entry. copyPayload: the publisher keeps the payload past Publish
// (an asynchronous producer), so each message gets its own copy.
// before, if not nil, runs between the publisher's start and the
// subscribers'.
func openURL(ctx context.Context, pubURL string, subURLs []string, copyPayload bool, before func(transport.Publisher) error) (*urlLink, error) {
	lctx, stop := context.WithCancel(context.Background())
	l := &urlLink{ctx: lctx, stop: stop, copy: copyPayload}
	var err error
	if l.pub, err = transport.OpenPublisher(ctx, pubURL); err != nil {
		stop()
		return nil, err
	}
	if before != nil {
		if err := before(l.pub); err != nil {
			l.Close()
			return nil, err
		}
	}
	for _, u := range subURLs {
		s, err := transport.OpenSubscriber(ctx, u)
		if err != nil {
			l.Close()
			return nil, err
		}
		l.subs = append(l.subs, &urlSub{s: s})
	}
	return l, nil
}

func (l *urlLink) Send(p []byte) error {
	if l.copy {
		p = append([]byte(nil), p...)
	}
	return l.pub.Publish(l.ctx, transport.Message{Topic: l.topic, Payload: p})
}

// zmqTopic is the ZeroMQ contenders' topic.
const zmqTopic = "t"

// Flush does nothing: our transports write by themselves, and their
// Flush waits for the write (or, for logd, the acknowledgement), which
// would make an open-loop publisher wait.
func (l *urlLink) Flush() error { return nil }
func (l *urlLink) Subs() []Sub  { return l.subs }

func (l *urlLink) Close() error {
	for _, s := range l.subs {
		s.(*urlSub).s.Close()
	}
	err := l.pub.Close()
	l.stop()
	return err
}

type urlSub struct {
	s    transport.Subscriber
	gaps atomic.Uint64
	// recovered, when the transport repairs, counts the repairs.
	recovered func() uint64
}

func (s *urlSub) Run(ctx context.Context, fn func([]byte)) error {
	for {
		ev, err := s.s.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, transport.ErrClosed) {
				return nil
			}
			return err
		}
		switch ev.Kind {
		case transport.EventMessage:
			fn(ev.Message.Payload)
		case transport.EventGap:
			if ev.Gap.Lost() {
				s.gaps.Add(ev.Gap.Len())
			}
		}
	}
}

func (s *urlSub) Counts() Counts {
	c := Counts{Gaps: s.gaps.Load()}
	if s.recovered != nil {
		c.Recovered = s.recovered()
	}
	return c
}

// freeTCPPort is a loopback port the kernel just found free.
func freeTCPPort() (int, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
