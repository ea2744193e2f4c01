package zmqbench

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"time"

	pebbe "github.com/pebbe/zmq4"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/zmq"
)

// Topic is every message's topic; PayloadSize its payload's length.
const (
	Topic       = "t"
	PayloadSize = 64
)

// pair is a publisher and a subscriber connected over loopback.
type pair interface {
	// send publishes one message with payload p (the caller may reuse
	// p). flush pushes out what send left buffered (raw TCP only: the
	// others flush by themselves).
	send(p []byte) error
	flush() error
	// recv returns the next message's payload, valid until the next
	// call, or an error after timeout.
	recv(timeout time.Duration) ([]byte, error)
	// lost is what the subscriber reported lost so far.
	lost() uint64
	close()
}

// contender opens pairs of one kind. latency is whether the pair is for
// the open-loop latency runs (raw TCP then writes each message at once).
type contender struct {
	name string
	open func(queue int, latency bool) (pair, error)
}

var errTimeout = errors.New("nothing received in time")

// contenders are the kinds compared, raw TCP last; rawBytes is how many
// bytes raw TCP writes per message.
func contenders(rawBytes int) []contender {
	return []contender{
		{"brokerless", func(q int, _ bool) (pair, error) { return openOurs(q, false) }},
		{"brokerless-pack", func(q int, _ bool) (pair, error) { return openOurs(q, true) }},
		{"libzmq", func(int, bool) (pair, error) { return openLibzmq() }},
		{"raw-tcp", func(_ int, latency bool) (pair, error) { return openRaw(rawBytes, latency) }},
	}
}

// OursWireBytes is what transport/zmq writes on the wire for one
// message of PayloadSize bytes on Topic, unpacked, no key or headers:
// three ZMTP frames of a flags byte and a one-byte length each: the
// topic, the header frame (32 fixed bytes, then the key length and the
// header count, one byte each) and the payload.
const OursWireBytes = (2 + len(Topic)) + (2 + 32 + 1 + 1) + (2 + PayloadSize)

// LibzmqWireBytes is what libzmq writes for the same message as two
// frames, topic and payload.
const LibzmqWireBytes = 2 + len(Topic) + 2 + PayloadSize

// ours is transport/zmq.
type ours struct {
	pub   *zmq.Publisher
	sub   *zmq.Subscriber
	ctx   context.Context
	stop  context.CancelFunc
	gaps  uint64
	topic string
	dl    deadline
	rctx  context.Context
	rstop context.CancelFunc
}

// deadline renews a receive deadline of timeout every refreshEvery
// calls, or when the timeout changes, rather than at every message
// (a context or socket deadline per message would cost the contenders
// more than what is measured). The deadline is thus up to refreshEvery
// messages early: milliseconds, against a timeout of seconds.
type deadline struct {
	timeout time.Duration
	calls   int
}

const refreshEvery = 1024

// expired makes the next call renew.
func (d *deadline) expired() { d.timeout = 0 }

func (d *deadline) renew(timeout time.Duration) bool {
	d.calls++
	if timeout == d.timeout && d.calls < refreshEvery {
		return false
	}
	d.timeout, d.calls = timeout, 0
	return true
}

func openOurs(queue int, pack bool) (pair, error) {
	ctx, stop := context.WithCancel(context.Background())
	pub, err := zmq.NewPublisher(ctx, zmq.Config{Bind: []string{"tcp://127.0.0.1:0"}, Pack: pack,
		SubscriberQueue: queue, SubscriberQueueBytes: 1 << 30, Heartbeat: -1})
	if err != nil {
		stop()
		return nil, err
	}
	sub, err := zmq.NewSubscriber(ctx, zmq.Config{Connect: []string{"tcp://" + pub.Addrs()[0].String()}, Subscribe: []string{Topic}})
	if err != nil {
		pub.Close()
		stop()
		return nil, err
	}
	return &ours{pub: pub, sub: sub, ctx: ctx, stop: stop, topic: Topic}, nil
}

func (o *ours) send(p []byte) error {
	return o.pub.Publish(o.ctx, transport.Message{Topic: o.topic, Payload: p})
}

func (o *ours) flush() error { return nil }

func (o *ours) recv(timeout time.Duration) ([]byte, error) {
	if o.dl.renew(timeout) {
		if o.rstop != nil {
			o.rstop()
		}
		o.rctx, o.rstop = context.WithTimeout(o.ctx, timeout)
	}
	for {
		ev, err := o.sub.Receive(o.rctx)
		if errors.Is(err, context.DeadlineExceeded) {
			o.dl.expired()
			return nil, errTimeout
		}
		if err != nil {
			return nil, err
		}
		switch ev.Kind {
		case transport.EventMessage:
			return ev.Message.Payload, nil
		case transport.EventGap:
			o.gaps += ev.Gap.Len()
		}
	}
}

func (o *ours) lost() uint64 { return o.gaps }

func (o *ours) close() {
	if o.rstop != nil {
		o.rstop()
	}
	o.sub.Close()
	o.pub.Close()
	o.stop()
}

// libzmq is a PUB and a SUB socket of libzmq, through pebbe/zmq4.
type libzmq struct {
	zctx     *pebbe.Context
	pub, sub *pebbe.Socket
	timeout  time.Duration
}

// openLibzmq sets no high-water mark (0): libzmq's is approximate, and
// a rate run must drop nothing (transport/zmq gets a queue of every
// message of the run instead, which it keeps exactly).
func openLibzmq() (pair, error) {
	zctx, err := pebbe.NewContext()
	if err != nil {
		return nil, err
	}
	l := &libzmq{zctx: zctx}
	if l.pub, err = zctx.NewSocket(pebbe.PUB); err != nil {
		l.close()
		return nil, err
	}
	if l.sub, err = zctx.NewSocket(pebbe.SUB); err != nil {
		l.close()
		return nil, err
	}
	for _, err := range []error{
		l.pub.SetSndhwm(0), l.sub.SetRcvhwm(0), l.pub.SetLinger(0), l.sub.SetLinger(0),
		l.pub.Bind("tcp://127.0.0.1:*"), l.sub.SetSubscribe(Topic),
	} {
		if err != nil {
			l.close()
			return nil, err
		}
	}
	ep, err := l.pub.GetLastEndpoint()
	if err == nil {
		err = l.sub.Connect(ep)
	}
	if err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

func (l *libzmq) send(p []byte) error {
	if _, err := l.pub.SendBytes([]byte(Topic), pebbe.SNDMORE); err != nil {
		return err
	}
	_, err := l.pub.SendBytes(p, 0)
	return err
}

func (l *libzmq) flush() error { return nil }

func (l *libzmq) recv(timeout time.Duration) ([]byte, error) {
	if timeout != l.timeout {
		if err := l.sub.SetRcvtimeo(timeout); err != nil {
			return nil, err
		}
		l.timeout = timeout
	}
	// Two frames, topic and payload, each with one call: what
	// RecvMessageBytes would add is a getsockopt(ZMQ_RCVMORE) per frame.
	if _, err := l.sub.RecvBytes(0); err != nil {
		if errors.Is(pebbe.AsErrno(err), pebbe.Errno(11)) { // EAGAIN: the timeout
			return nil, errTimeout
		}
		return nil, err
	}
	return l.sub.RecvBytes(0)
}

func (l *libzmq) lost() uint64 { return 0 }

func (l *libzmq) close() {
	if l.sub != nil {
		l.sub.Close()
	}
	if l.pub != nil {
		l.pub.Close()
	}
	l.zctx.Term()
}

// raw is a TCP connection carrying records of a fixed size, the payload
// at their end, written through a buffer (flushed after each record in
// the latency runs) and read through one.
type raw struct {
	w, r    net.Conn
	bw      *bufio.Writer
	br      *bufio.Reader
	wrec    []byte // written by send
	rrec    []byte // read by recv
	each    bool
	payload int
	dl      deadline
}

func openRaw(size int, latency bool) (pair, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer l.Close()
	w, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return nil, err
	}
	r, err := l.Accept()
	if err != nil {
		w.Close()
		return nil, err
	}
	return &raw{w: w, r: r, bw: bufio.NewWriterSize(w, 64<<10), br: bufio.NewReaderSize(r, 64<<10),
		wrec: make([]byte, size), rrec: make([]byte, size), each: latency, payload: size - PayloadSize}, nil
}

func (c *raw) send(p []byte) error {
	copy(c.wrec[c.payload:], p)
	if _, err := c.bw.Write(c.wrec); err != nil {
		return err
	}
	if c.each {
		return c.bw.Flush()
	}
	return nil
}

func (c *raw) flush() error { return c.bw.Flush() }

func (c *raw) recv(timeout time.Duration) ([]byte, error) {
	if c.dl.renew(timeout) {
		c.r.SetReadDeadline(time.Now().Add(timeout))
	}
	if _, err := io.ReadFull(c.br, c.rrec); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.dl.expired()
			return nil, errTimeout
		}
		return nil, err
	}
	return c.rrec[c.payload:], nil
}

func (c *raw) lost() uint64 { return 0 }

func (c *raw) close() {
	c.w.Close()
	c.r.Close()
}
