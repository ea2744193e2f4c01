package zmq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"

	"github.com/brokerless/brokerless/transport"
)

// startBalancer starts a balancer bound to a free port of 127.0.0.1.
func startBalancer(t *testing.T) (*Balancer, string) {
	t.Helper()
	b, err := NewBalancer(context.Background(), Config{Bind: []string{"tcp://127.0.0.1:0"}, Linger: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, "tcp://" + b.Addrs()[0].(*net.TCPAddr).String()
}

// receiptLog counts the receipts of a balancer's tasks.
type receiptLog struct {
	mu   sync.Mutex
	done map[uint64]int
	all  chan struct{}
	want int
}

func newReceipts(want int) *receiptLog {
	return &receiptLog{done: map[uint64]int{}, all: make(chan struct{}), want: want}
}

func (r *receiptLog) receipt(rc transport.Receipt, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		return
	}
	r.done[rc.Seq]++
	if len(r.done) == r.want {
		close(r.all)
	}
}

// check fails t unless task 1..want were each done exactly once.
func (r *receiptLog) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for seq := uint64(1); seq <= uint64(r.want); seq++ {
		if n := r.done[seq]; n != 1 {
			t.Errorf("task %d done %d times, want once", seq, n)
		}
	}
}

// TestBalancerRoundRobin: with three workers each ready for ten tasks,
// thirty tasks go to them in turn: each gets ten, every third.
func TestBalancerRoundRobin(t *testing.T) {
	ctx := testCtx(t)
	b, ep := startBalancer(t)
	var ws []*Worker
	for range 3 {
		w, err := NewWorker(ctx, Config{Connect: []string{ep}, Credit: 10})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		ws = append(ws, w)
	}
	if err := b.WaitReady(ctx, 3); err != nil {
		t.Fatal(err)
	}
	const n = 30
	r := newReceipts(n)
	for i := range n {
		if err := b.PublishReceipt(ctx, transport.Message{Payload: []byte(strconv.Itoa(i))}, r.receipt); err != nil {
			t.Fatal(err)
		}
	}
	residues := map[uint64]int{}
	for i, w := range ws {
		var first uint64
		for k := range n / 3 {
			m := nextMessage(t, w)
			if k == 0 {
				first = m.Seq
				residues[first%3] = i
			} else if m.Seq != first+3*uint64(k) {
				t.Errorf("worker %d: task %d is seq %d, want %d (every third from %d)", i, k, m.Seq, first+3*uint64(k), first)
			}
			if err := w.Ack(ctx, m.Stream, m.Seq); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(residues) != 3 {
		t.Errorf("workers started at tasks with residues %v: want one each of 0, 1, 2", residues)
	}
	<-r.all
	r.check(t)
}

// TestBalancerRedelivers: a worker that closes holding a task it did not
// acknowledge has it handed to another worker; every task is done once.
func TestBalancerRedelivers(t *testing.T) {
	ctx := testCtx(t)
	b, ep := startBalancer(t)
	quitter, err := NewWorker(ctx, Config{Connect: []string{ep}, Credit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WaitReady(ctx, 1); err != nil {
		t.Fatal(err)
	}
	const n = 20
	r := newReceipts(n)
	for i := range n {
		if err := b.PublishReceipt(ctx, transport.Message{Payload: []byte(strconv.Itoa(i))}, r.receipt); err != nil {
			t.Fatal(err)
		}
	}
	m := nextMessage(t, quitter)
	quitter.Ack(ctx, m.Stream, m.Seq)
	nextMessage(t, quitter) // taken, never acknowledged
	quitter.Close()
	w, err := NewWorker(ctx, Config{Connect: []string{ep}, Credit: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for range n - 1 {
		m := nextMessage(t, w)
		w.Ack(ctx, m.Stream, m.Seq)
	}
	<-r.all
	r.check(t)
	if st := b.Stats(); st.Redelivered < 1 || st.Completed != n {
		t.Errorf("stats %+v: want at least 1 redelivered, %d completed", st, n)
	}
}

// TestInteropBalancerPyzmqWorkers: three libzmq REQ workers; one is
// killed mid-run; every task is done exactly once, and the killed
// worker's unfinished task by another worker.
func TestInteropBalancerPyzmqWorkers(t *testing.T) {
	ctx := testCtx(t)
	b, ep := startBalancer(t)
	var py []*pyPeer
	for i := range 3 {
		py = append(py, startPy(t, "worker", ep, fmt.Sprint("w", i), "0.002"))
	}
	if err := b.WaitReady(ctx, 3); err != nil {
		t.Fatal(err)
	}
	const n = 600
	r := newReceipts(n)
	for i := range n {
		if err := b.PublishReceipt(ctx, transport.Message{Payload: []byte(strconv.Itoa(i))}, r.receipt); err != nil {
			t.Fatal(err)
		}
	}
	for range 30 {
		py[0].next() // w0 took a task
	}
	if err := py[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-r.all
	r.check(t)
	st := b.Stats()
	if st.Redelivered < 1 || st.Completed != n || st.Workers != 2 {
		t.Errorf("stats %+v: want the killed worker's task redelivered, %d completed, 2 workers left", st, n)
	}
	t.Logf("balancer: %+v", st)
}

// TestWorkerAnswersBadTask: a task whose header frame the worker cannot
// read is said done at once, so that the balancer's credit comes back,
// and counted; the next good task is delivered.
func TestWorkerAnswersBadTask(t *testing.T) {
	w := &Worker{q: newInq(10, 1<<20), closed: make(chan struct{}), pending: map[transport.StreamID][]held{}, sock: newSocket(socketConfig{})}
	p := &peer{out: newOutq(10, 1<<20), closing: make(chan struct{})}
	bad := appendHeader(nil, &header{kind: kindHeartbeat, feed: 1, session: 2, seq: 1}) // not a task
	good := appendHeader(nil, &header{kind: kindMessage, feed: 1, session: 2, seq: 2})
	for _, task := range [][][]byte{{[]byte("t"), bad, []byte("bad")}, {[]byte("t"), good, []byte("good")}} {
		w.q.put(inItem{frames: task, conn: &inConn{peer: p}}, nil)
	}
	if m := nextMessage(t, w); m.Seq != 2 || string(m.Payload) != "good" {
		t.Fatalf("got task %d %q, want 2 good", m.Seq, m.Payload)
	}
	sent := p.out.take(nil)
	if len(sent) != 1 || len(sent[0].frames) != 2 || string(sent[0].frames[0]) != "done" || !bytes.Equal(sent[0].frames[1], bad) {
		t.Fatalf("worker sent %v for a bad task, want done and its header", sent)
	}
	if st := w.Stats(); st.Received != 2 || st.BadTasks != 1 {
		t.Fatalf("stats %+v, want 2 received, 1 bad", st)
	}
}

// TestBalancerWaitReadyClosed: Close ends a WaitReady that no worker
// would ever satisfy, and a later one returns at once.
func TestBalancerWaitReadyClosed(t *testing.T) {
	b, _ := startBalancer(t)
	ctx := testCtx(t)
	errc := make(chan error, 1)
	go func() { errc <- b.WaitReady(ctx, 1) }()
	b.Close()
	if err := <-errc; !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("WaitReady across Close: %v, want ErrClosed", err)
	}
	if err := b.WaitReady(ctx, 1); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("WaitReady after Close: %v, want ErrClosed", err)
	}
}

// TestWorkerRefusesTasksBeyondCredit: a balancer that sends more tasks
// than the worker's credit asked for (the worker held every one, up to
// MaxCredit+1 of MaxMessageBytes each) has its connection closed and
// counted; the tasks within the credit are delivered, and one said done
// makes room for one more.
func TestWorkerRefusesTasksBeyondCredit(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	w, err := NewWorker(t.Context(), Config{Connect: []string{"tcp://" + l.Addr().String()}, Credit: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	zc, err := zmq4.Open(c, null.Security(), zmq4.Router, nil, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if msg, err := zc.RecvMsg(); err != nil || string(msg.Frames[0]) != "ready" || string(msg.Frames[1]) != "2" {
		t.Fatalf("worker asked %q (%v), want ready 2", msg.Frames, err)
	}
	task := func(seq uint64) zmq4.Msg {
		h := header{kind: kindMessage, feed: 1, session: 1, seq: seq}
		return zmq4.NewMsgFrom([]byte("t"), appendHeader(nil, &h), []byte("task"))
	}
	for seq := range uint64(2) {
		if err := zc.SendMsg(task(seq + 1)); err != nil {
			t.Fatal(err)
		}
	}
	m := nextMessage(t, w)
	if err := w.Ack(testCtx(t), m.Stream, m.Seq); err != nil {
		t.Fatal(err)
	}
	if msg, err := zc.RecvMsg(); err != nil || string(msg.Frames[0]) != "done" {
		t.Fatalf("worker sent %q (%v), want done", msg.Frames, err)
	}
	for _, seq := range []uint64{3, 4} { // 3 is owed credit, 4 is not
		if err := zc.SendMsg(task(seq)); err != nil {
			t.Fatal(err)
		}
	}
	if !closedSoon(c) {
		t.Fatal("a balancer that sent a task beyond the credit was not disconnected")
	}
	if st := w.Stats(); st.OverCredit != 1 || st.Received != 1 {
		t.Errorf("stats %+v, want OverCredit 1, Received 1", st)
	}
	for _, want := range []uint64{2, 3} {
		if m := nextMessage(t, w); m.Seq != want {
			t.Fatalf("got task %d, want %d", m.Seq, want)
		}
	}
	w.q.mu.Lock()
	left := len(w.q.items) - w.q.head
	w.q.mu.Unlock()
	if left != 0 {
		t.Errorf("%d tasks beyond the credit were kept", left)
	}
}
