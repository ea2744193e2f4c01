package zmq

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/brokerless/brokerless/transport"
)

// MaxCredit bounds the tasks one worker may hold at once.
const MaxCredit = 1000

// Balancer hands each message to exactly one of its workers, round-robin
// among those ready for more, and hands a task again to another worker
// when the one holding it disconnects before saying it is done. It is a
// ROUTER socket speaking a small protocol that any libzmq REQ or DEALER
// socket can follow (go-zeromq/zmq4's PUSH sends every message to every
// peer, #158, and a PUSH/PULL pair cannot say what a worker finished):
//
//	worker → balancer  ["ready"] or ["ready", N]   N more tasks (default 1)
//	balancer → worker  [topic, header frame, payload]   a task
//	worker → balancer  ["done", header frame]      finished; one more task
//
// A REQ worker's frames follow its empty delimiter, as REQ sends them:
// send ["ready"], then for each task received send ["done", header].
// A worker that is killed while holding tasks has them handed to
// another: a task is done once, if a worker did part of it before
// dying it may be done twice.
//
// Balancer implements transport.Publisher, and transport.ReceiptPublisher
// whose receipt comes when a worker said the task is done.
type Balancer struct {
	cfg     Config
	sock    *socket
	session uint64

	mu       sync.Mutex
	closed   bool
	next     uint64
	waiting  []*task // not handed out, oldest first
	waitSize int
	workers  []*worker
	rr       int
	inflight int
	changed  broadcast // a task was handed out or done, or room was made

	published, completed, redelivered, unknownDone atomic.Uint64
}

type task struct {
	seq    uint64
	frames [][]byte // topic, header, payload
	size   int
	done   func(transport.Receipt, error)
}

type worker struct {
	p        *peer
	req      bool // a REQ socket: frames follow an empty delimiter
	credit   int
	inflight map[uint64]*task
}

// NewBalancer binds and connects the endpoints of cfg. Of cfg it uses
// the endpoints, Feed, SendQueueBytes (what may wait for a worker;
// Publish blocks beyond), MaxMessageBytes, MaxPeers, Linger and the
// timings.
func NewBalancer(ctx context.Context, cfg Config) (*Balancer, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	b := &Balancer{cfg: cfg, session: newSession(), next: 1}
	sc := cfg.socketConfig()
	sc.typ = zmq4.Router
	sc.role = b
	sc.queueItems = MaxCredit + 1
	sc.queueBytes = 1 << 62 // bounded by the credit
	b.sock = newSocket(sc)
	if err := b.sock.start(cfg.Bind, cfg.Connect); err != nil {
		b.sock.close()
		return nil, err
	}
	return b, nil
}

// Semantics: a balancer's tasks are neither ordered across workers nor
// gap-reported; see the type's documentation.
func (b *Balancer) Semantics() transport.Semantics { return 0 }

// Addrs are the addresses the balancer listens on.
func (b *Balancer) Addrs() []net.Addr { return b.sock.addrs() }

// Workers is the number of workers connected.
func (b *Balancer) Workers() int { return b.sock.numPeers() }

// Publish queues m for one worker.
func (b *Balancer) Publish(ctx context.Context, m transport.Message) error {
	return b.publish(ctx, &m, nil)
}

// PublishReceipt is Publish whose done is called once a worker said the
// task is done (or with ErrClosed if the balancer closed first).
func (b *Balancer) PublishReceipt(ctx context.Context, m transport.Message, done func(transport.Receipt, error)) error {
	return b.publish(ctx, &m, done)
}

func (b *Balancer) publish(ctx context.Context, m *transport.Message, done func(transport.Receipt, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := m.Time
	if t.IsZero() {
		t = time.Now()
	}
	size := len(m.Topic) + headerFixed + keyHeadersLen(m.Key, m.Headers) + len(m.Payload)
	if size+binaryOverhead > b.cfg.MaxMessageBytes {
		return fmt.Errorf("%w: %d bytes with its topic and header frame, at most %d", transport.ErrTooLarge, size, b.cfg.MaxMessageBytes-binaryOverhead)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		if b.closed {
			return transport.ErrClosed
		}
		if b.waitSize == 0 || b.waitSize+size <= b.cfg.SendQueueBytes {
			break
		}
		ch := b.changed.wait()
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			b.mu.Lock()
			return ctx.Err()
		}
		b.mu.Lock()
	}
	seq := b.next
	b.next++
	h := header{kind: kindMessage, feed: b.cfg.Feed, session: b.session, seq: seq, time: t.UnixNano(), key: m.Key, headers: m.Headers}
	buf := appendHeader(make([]byte, 0, size), &h)
	n := len(buf)
	buf = append(buf, m.Payload...)
	tk := &task{seq: seq, frames: [][]byte{[]byte(m.Topic), buf[:n:n], buf[n:]}, size: size, done: done}
	b.waiting = append(b.waiting, tk)
	b.waitSize += size
	b.published.Add(1)
	b.dispatch()
	return nil
}

// dispatch hands waiting tasks to workers with credit, round-robin.
// b.mu is held.
func (b *Balancer) dispatch() {
	for len(b.waiting) > 0 && len(b.workers) > 0 {
		var w *worker
		for i := range b.workers {
			c := b.workers[(b.rr+i)%len(b.workers)]
			if c.credit > 0 {
				w = c
				b.rr = (b.rr + i + 1) % len(b.workers)
				break
			}
		}
		if w == nil {
			return
		}
		tk := b.waiting[0]
		frames := tk.frames
		if w.req {
			frames = append([][]byte{{}}, frames...)
		}
		if !w.p.out.tryPut(zmsg{frames: frames, size: tk.size, msgs: 1}) {
			w.credit = 0 // closing: its tasks come back at detach
			continue
		}
		b.waiting[0] = nil
		b.waiting = b.waiting[1:]
		b.waitSize -= tk.size
		w.credit--
		w.inflight[tk.seq] = tk
		b.inflight++
	}
	b.changed.notify()
}

func (b *Balancer) attach(p *peer) error {
	if p.typ != zmq4.Req && p.typ != zmq4.Dealer {
		return fmt.Errorf("zmq: a %s cannot be a worker: want REQ or DEALER", p.typ)
	}
	w := &worker{p: p, req: p.typ == zmq4.Req, inflight: map[uint64]*task{}}
	p.state = w
	b.mu.Lock()
	b.workers = append(b.workers, w)
	b.mu.Unlock()
	return nil
}

// detach hands the tasks of a worker that left to the others, first.
func (b *Balancer) detach(p *peer) {
	w := p.state.(*worker)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.workers = slices.DeleteFunc(b.workers, func(x *worker) bool { return x == w })
	if len(w.inflight) == 0 {
		return
	}
	back := make([]*task, 0, len(w.inflight))
	for _, tk := range w.inflight {
		back = append(back, tk)
		b.waitSize += tk.size
	}
	slices.SortFunc(back, func(x, y *task) int { return cmp.Compare(x.seq, y.seq) })
	b.inflight -= len(back)
	b.redelivered.Add(uint64(len(back)))
	w.inflight = nil
	b.waiting = append(back, b.waiting...)
	b.dispatch()
}

func (b *Balancer) received(p *peer, frames [][]byte) error {
	w := p.state.(*worker)
	if w.req {
		if len(frames) == 0 || len(frames[0]) != 0 {
			return fmt.Errorf("zmq: REQ worker %s sent no empty delimiter", p.remote)
		}
		frames = frames[1:]
	}
	if len(frames) == 0 {
		return fmt.Errorf("zmq: worker %s sent an empty message", p.remote)
	}
	switch string(frames[0]) {
	case "ready":
		n := 1
		if len(frames) > 1 {
			v, err := strconv.Atoi(string(frames[1]))
			if err != nil || v < 1 {
				return fmt.Errorf("zmq: worker %s: ready %q: want a positive count", p.remote, frames[1])
			}
			n = v
		}
		b.mu.Lock()
		w.credit = min(w.credit+n, MaxCredit)
		b.dispatch()
		b.mu.Unlock()
	case "done":
		if len(frames) != 2 {
			return fmt.Errorf("zmq: worker %s: done wants the task's header frame", p.remote)
		}
		h, err := parseHeader(frames[1], nil)
		if err != nil {
			return fmt.Errorf("zmq: worker %s: done: %w", p.remote, err)
		}
		b.mu.Lock()
		tk, ok := w.inflight[h.seq]
		if ok && h.session == b.session {
			delete(w.inflight, h.seq)
			b.inflight--
			b.completed.Add(1)
		} else {
			ok = false
			b.unknownDone.Add(1)
		}
		w.credit = min(w.credit+1, MaxCredit)
		b.dispatch()
		b.mu.Unlock()
		if ok && tk.done != nil {
			tk.done(transport.Receipt{Stream: transport.StreamID{Feed: b.cfg.Feed, Session: b.session}, Seq: tk.seq}, nil)
		}
	default:
		return fmt.Errorf("zmq: worker %s sent %q: want ready or done", p.remote, frames[0])
	}
	return nil
}

// WaitReady waits until n workers are ready for a task; Close ends
// the wait (transport.ErrClosed).
func (b *Balancer) WaitReady(ctx context.Context, n int) error {
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return transport.ErrClosed
		}
		ch := b.changed.wait()
		b.mu.Unlock()
		if b.Stats().Ready >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Flush waits until every task published so far is done.
func (b *Balancer) Flush(ctx context.Context) error {
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return transport.ErrClosed
		}
		ch := b.changed.wait()
		idle := len(b.waiting) == 0 && b.inflight == 0
		b.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close waits up to Linger for the tasks to be done, then closes every
// connection; the receipts of tasks not done say ErrClosed.
func (b *Balancer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.Linger)
	b.Flush(ctx)
	cancel()
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.changed.notify()
	b.sock.close()
	b.mu.Lock()
	left := b.waiting
	b.waiting = nil
	b.mu.Unlock()
	for _, tk := range left {
		if tk.done != nil {
			tk.done(transport.Receipt{Stream: transport.StreamID{Feed: b.cfg.Feed, Session: b.session}, Seq: tk.seq}, transport.ErrClosed)
		}
	}
	return nil
}

// BalancerStats are a balancer's counters.
type BalancerStats struct {
	// Workers is the number connected, Ready those that asked for a
	// task they were not given yet; Waiting and InFlight the tasks not
	// handed out and not done.
	Workers, Ready, Waiting, InFlight int
	// Published, Completed and Redelivered (handed again after their
	// worker left) count tasks; UnknownDone counts "done" for tasks the
	// worker did not hold.
	Published, Completed, Redelivered, UnknownDone uint64
}

// Stats returns the balancer's counters.
func (b *Balancer) Stats() BalancerStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	ready := 0
	for _, w := range b.workers {
		if w.credit > 0 {
			ready++
		}
	}
	return BalancerStats{
		Workers: len(b.workers), Ready: ready, Waiting: len(b.waiting), InFlight: b.inflight,
		Published: b.published.Load(), Completed: b.completed.Load(), Redelivered: b.redelivered.Load(), UnknownDone: b.unknownDone.Load(),
	}
}
