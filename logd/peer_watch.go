package logd

import (
	"bufio"
	"context"
	"net"
	"sync/atomic"
	"time"
)

// peerWatch is a connection's context, and what ends it early: the
// client going away while a handler waits or while the reader is
// paused. Requests are read one at a time, so while a handler waits (a
// JoinGroup for its rebalance, a SyncGroup for its leader, a Fetch for
// records), and while connPipeline answers wait to be written (acks=all
// produces waiting for their fsync: the reader pauses, see send),
// nobody reads the socket, and a client that closed it would go
// unnoticed until the wait ended — up to a rebalance timeout the client
// chose, or IdleTimeout — holding the connection's goroutine, its
// buffers and its MaxConnections and MaxConnectionsPerIP slots. A
// handler about to wait, or the paused reader, calls context: from
// then until stop, a goroutine reads ahead into the connection's read
// buffer and cancels the context when it reads the end of the stream
// or an error. Bytes that arrive meanwhile (pipelined requests) stay in
// the read buffer for the next request and do not end the watch; the
// read-ahead is bounded by that buffer (connReadBuffer), never a
// request's size. Once it is full, the watch waits for the peer's
// hang-up without reading (waitHangUp: poll's POLLRDHUP on Linux;
// elsewhere it ends there, and a close is seen at the next read). A
// Fetch starts the watch only once it has to wait: one answered at once
// starts nothing.
//
// The context is also what the connection's writer waits on for an
// acks=all produce's durability. The reader is not held up by that
// wait and goes on reading, so it sees the client leave itself, and
// ends the context (serveConn); while it is paused, the watch does. The
// context also ends when the connection does, and when the server
// closes.
type peerWatch struct {
	ctx    context.Context
	cancel context.CancelFunc
	nc     net.Conn
	r      *bufio.Reader
	done   chan struct{} // while watching: closed when the watching goroutine ends
	gone   atomic.Bool   // the peer closed the connection (or it failed) while watched
}

func newPeerWatch(parent context.Context, nc net.Conn, r *bufio.Reader) *peerWatch {
	ctx, cancel := context.WithCancel(parent)
	return &peerWatch{ctx: ctx, cancel: cancel, nc: nc, r: r}
}

// context returns the connection's context, watching the socket until
// stop if it is not watched yet. Only the connection's reader calls it
// (from a handler), and it reads nothing itself until stop.
func (w *peerWatch) context() context.Context {
	if w.done == nil {
		// Cleared here, not in the goroutine, so stop's deadline cannot
		// be overwritten.
		_ = w.nc.SetReadDeadline(time.Time{})
		w.done = make(chan struct{})
		go w.watch(w.done)
	}
	return w.ctx
}

func (w *peerWatch) watch(done chan struct{}) {
	defer close(done)
	for w.r.Buffered() < w.r.Size() {
		if _, err := w.r.Peek(w.r.Buffered() + 1); err != nil {
			if !isTimeout(err) {
				w.hungUp()
			}
			return
		}
	}
	if waitHangUp(w.nc) {
		w.hungUp()
	}
}

func (w *peerWatch) hungUp() {
	w.gone.Store(true)
	w.cancel()
}

// stop ends the watch, if there is one, once the handler has returned,
// so that the reader can read again; it reports whether the peer went
// away meanwhile. The read deadline it leaves is in the past: the
// reader sets its own before reading.
func (w *peerWatch) stop() (gone bool) {
	if w.done == nil {
		return false
	}
	_ = w.nc.SetReadDeadline(time.Unix(1, 0))
	<-w.done
	w.done = nil
	return w.gone.Load()
}

// end cancels the context: the connection is over.
func (w *peerWatch) end() { w.cancel() }
