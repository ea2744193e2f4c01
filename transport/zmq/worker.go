package zmq

import (
	"context"
	"errors"
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

// Worker takes tasks from Balancers: a DEALER socket that asks for
// Config.Credit tasks, delivers them, and tells the balancer a task is
// done when the application acknowledges it — what it has not
// acknowledged when it stops, or its connection drops, the balancer hands
// to another worker. It implements transport.Subscriber and
// transport.Acknowledger.
type Worker struct {
	cfg  Config
	sock *socket
	q    *inq

	closeOnce sync.Once
	closed    chan struct{}

	rmu     sync.Mutex
	hs      []transport.Header
	mu      sync.Mutex
	pending map[transport.StreamID][]held // received, not acknowledged, in order
	// owed counts, per balancer, the tasks received and not yet said
	// done: never more than Credit, which is all the worker asked for.
	owed map[*peer]int
	// order numbers the tasks delivered.
	order uint64

	tasks, badTasks, overCredit, forgotten atomic.Uint64
}

// held is a task delivered and not yet acknowledged. One whose peer
// closed stays, saying nothing when acknowledged, so that its Ack
// matches it and not a later copy of the task the balancer handed again
// (and, cumulatively, what came before that copy).
type held struct {
	seq   uint64
	order uint64
	hdr   []byte
	peer  *peer
}

// maxGone bounds the held tasks of connections that dropped.
const maxGone = MaxCredit

// NewWorker connects (or binds) the endpoints of cfg.
func NewWorker(ctx context.Context, cfg Config) (*Worker, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// A balancer sends at most Credit tasks before a "done": the
	// queue's count holds what every balancer may send, and its bytes
	// bound what several of them send at once.
	w := &Worker{cfg: cfg, q: newInq(MaxCredit+1, cfg.ReceiveQueueBytes), closed: make(chan struct{}),
		pending: map[transport.StreamID][]held{}, owed: map[*peer]int{}}
	sc := cfg.socketConfig()
	sc.typ = zmq4.Dealer
	sc.role = w
	sc.queueItems = 2*MaxCredit + 2
	sc.queueBytes = 1 << 62 // bounded by the count: small messages
	w.sock = newSocket(sc)
	if err := w.sock.start(cfg.Bind, cfg.Connect); err != nil {
		w.sock.close()
		return nil, err
	}
	return w, nil
}

func (w *Worker) attach(p *peer) error {
	if p.typ != zmq4.Router {
		return errors.New("zmq: a worker's peer must be a balancer (ROUTER)")
	}
	p.state = p
	p.out.tryPut(zmsg{frames: [][]byte{[]byte("ready"), []byte(strconv.Itoa(w.cfg.Credit))}})
	return nil
}

// detach is told that a balancer went away: it hands the tasks it gave
// this worker to another worker. The worker keeps those it delivered,
// for their Acks to match (they say nothing), up to maxGone of them;
// beyond, it forgets the oldest, counted.
func (w *Worker) detach(p *peer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.owed, p)
	var gone []uint64
	for _, hs := range w.pending {
		for _, h := range hs {
			if h.peer == p || h.peer.isClosing() {
				gone = append(gone, h.order)
			}
		}
	}
	if len(gone) <= maxGone {
		return
	}
	slices.Sort(gone)
	keep := gone[len(gone)-maxGone] // the oldest kept
	for id, hs := range w.pending {
		kept := hs[:0]
		for _, h := range hs {
			if h.order < keep && (h.peer == p || h.peer.isClosing()) {
				w.forgotten.Add(1)
				continue
			}
			kept = append(kept, h)
		}
		clear(hs[len(kept):])
		if len(kept) == 0 {
			delete(w.pending, id)
		} else {
			w.pending[id] = kept
		}
	}
}

func (w *Worker) received(p *peer, frames [][]byte) error {
	if len(frames) != 3 || !isHeader(frames[1]) {
		return errors.New("zmq: a balancer sent a task that is not [topic, header, payload]")
	}
	w.mu.Lock()
	over := w.owed[p] >= w.cfg.Credit
	if !over {
		w.owed[p]++
	}
	w.mu.Unlock()
	if over {
		// The task is not taken: the balancer hands it, and what else
		// this worker held of it, to another worker.
		w.overCredit.Add(1)
		return fmt.Errorf("zmq: balancer %s sent a task beyond the worker's credit of %d", p.remote, w.cfg.Credit)
	}
	size := len(frames[0]) + len(frames[1]) + len(frames[2])
	if !w.q.put(inItem{frames: frames, size: size, conn: &inConn{peer: p}}, p.closing) {
		return errClosedSocket
	}
	return nil
}

// Semantics: at-least-once.
func (w *Worker) Semantics() transport.Semantics { return transport.AtLeastOnce }

// Addrs are the addresses the worker listens on, if it binds.
func (w *Worker) Addrs() []net.Addr { return w.sock.addrs() }

// Receive returns the next task.
func (w *Worker) Receive(ctx context.Context) (transport.Event, error) {
	w.rmu.Lock()
	defer w.rmu.Unlock()
	for {
		if err := ctx.Err(); err != nil {
			return transport.Event{}, err
		}
		select {
		case <-w.closed:
			return transport.Event{}, transport.ErrClosed
		default:
		}
		it, err := w.q.get(ctx, w.closed)
		if errors.Is(err, errClosedSocket) {
			return transport.Event{}, transport.ErrClosed
		}
		if err != nil {
			return transport.Event{}, err
		}
		w.tasks.Add(1)
		h, err := parseHeader(it.frames[1], w.hs)
		if err != nil || h.kind != kindMessage {
			// Not a task this worker can read: said done at once, so
			// that its credit returns to the balancer, and counted.
			w.badTasks.Add(1)
			w.said(it.conn.peer)
			if p := it.conn.peer; !p.out.tryPut(zmsg{frames: [][]byte{[]byte("done"), it.frames[1]}}) {
				p.close()
			}
			continue
		}
		w.hs = h.headers
		id := transport.StreamID{Feed: h.feed, Session: h.session}
		w.mu.Lock()
		w.order++
		w.pending[id] = append(w.pending[id], held{seq: h.seq, order: w.order, hdr: it.frames[1], peer: it.conn.peer})
		w.mu.Unlock()
		return transport.Event{Kind: transport.EventMessage, Message: transport.Message{
			Stream: id, Seq: h.seq, Time: time.Unix(0, h.time), Topic: string(it.frames[0]),
			Key: h.key, Headers: h.headers, Payload: it.frames[2]}}, nil
	}
}

// Ack tells the balancer that task seq of stream, and every task of the
// stream received before it, is done.
func (w *Worker) Ack(ctx context.Context, stream transport.StreamID, seq uint64) error {
	w.mu.Lock()
	hs := w.pending[stream]
	n := 0
	for i, h := range hs {
		if h.seq == seq {
			n = i + 1
			break
		}
	}
	done := append([]held(nil), hs[:n]...)
	for _, h := range done {
		if w.owed[h.peer] > 0 {
			w.owed[h.peer]--
		}
	}
	if n == len(hs) {
		delete(w.pending, stream)
	} else if n > 0 {
		w.pending[stream] = hs[n:]
	}
	w.mu.Unlock()
	for _, h := range done {
		if h.peer.isClosing() {
			continue // the balancer handed it to another worker
		}
		if !h.peer.out.tryPut(zmsg{frames: [][]byte{[]byte("done"), h.hdr}}) {
			h.peer.close() // its tasks go to another worker
		}
	}
	return nil
}

// said is told that a task of balancer p is said done.
func (w *Worker) said(p *peer) {
	w.mu.Lock()
	if w.owed[p] > 0 {
		w.owed[p]--
	}
	w.mu.Unlock()
}

// WorkerStats are a worker's counters.
type WorkerStats struct {
	// Received counts tasks received; BadTasks those whose header frame
	// could not be read, said done at once without being delivered.
	Received, BadTasks uint64
	// OverCredit counts balancer connections closed for sending a task
	// beyond the worker's Credit (the task is not taken: the balancer
	// hands it to another worker).
	OverCredit uint64
	// Forgotten counts tasks delivered on a balancer connection that
	// dropped and not acknowledged, forgotten beyond 1000 (MaxCredit)
	// of them: an Ack of one then matches a later copy of the task, if
	// there is one.
	Forgotten uint64
	// FrameTimeouts and TooLarge count balancer connections failed with
	// ErrFrameTimeout and ErrFrameTooLarge.
	FrameTimeouts, TooLarge uint64
}

// Stats returns the worker's counters.
func (w *Worker) Stats() WorkerStats {
	return WorkerStats{Received: w.tasks.Load(), BadTasks: w.badTasks.Load(), OverCredit: w.overCredit.Load(), Forgotten: w.forgotten.Load(),
		FrameTimeouts: w.sock.stats.frameTimeouts.Load(), TooLarge: w.sock.stats.tooLarge.Load()}
}

// Close waits up to Linger for the acknowledgements to be written, then
// closes every connection: the balancer hands what was not acknowledged
// to another worker.
func (w *Worker) Close() error {
	w.closeOnce.Do(func() {
		close(w.closed)
		ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Linger)
		defer cancel()
		for {
			ch := w.sock.progress.wait()
			queued := 0
			w.sock.eachPeer(func(p *peer) {
				n, _ := p.out.usage()
				queued += n
			})
			if queued == 0 {
				break
			}
			select {
			case <-ch:
				continue
			case <-ctx.Done():
			}
			break
		}
	})
	w.sock.close()
	return nil
}
