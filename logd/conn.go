package logd

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage"
)

// client is one connection's identity, for handlers that need it, and
// the buffer its fetches read record batches into (taken from the
// server's pool for a Fetch and given back once it is answered).
type client struct {
	id    string // the request header's client id
	host  string
	fetch []byte
	// copied is the record bytes read into fetch, taken from the
	// server's copiedBytes and given back with the buffer.
	copied int64
	// zeroCopy: the connection can send record sets from segment files
	// (sendfile), so a fetch leaves checked ones in regions, one per
	// partition of its response in order (File nil: read into fetch).
	zeroCopy bool
	regions  []storage.Region
	files    *fetchFiles // the descriptors regions and unwritten answers hold
	// auth is the connection's authentication state, nil when the
	// server requires none; hangUp closes the connection once the
	// current request is answered (or at once if it has no answer).
	auth   *connAuth
	hangUp bool
	// peer is the connection's context for handlers that wait and for
	// the writer's durable waits, ended early when the client goes away
	// meanwhile.
	peer *peerWatch
	// durable is set by a produce whose answer must wait until its
	// batches are durable: the connection's writer waits, while the
	// next request is read and appended (see reply).
	durable *durableWait
	// joinWaiting, when not nil, is called by a JoinGroup about to wait
	// for its group (see conn.joinWaiting).
	joinWaiting func()
}

// conn is one client connection: its socket, what handlers know of the
// client, and the buffer of the request being read or handled.
// Requests are handled one at a time, in order, and answered in that
// order by the connection's writer. A produce waiting for its fsync
// does not hold up the next request: it is read and appended while the
// writer waits, so one producer's pipelined requests share the disk's
// time between writing and syncing (Kafka clients keep up to 5 produce
// requests in flight per connection). At most connPipeline answers wait
// to be written; the reader reads no request while they do, but still
// watches the socket (peerWatch): a client that closes it meanwhile
// ends their waits and frees the connection at once. Between
// requests a connection holds no request buffer, and no request memory
// but the charge of acks=all produces whose answers wait for their fsync.
type conn struct {
	s   *Server
	nc  net.Conn
	r   *bufio.Reader
	log *slog.Logger
	cl  client

	accepted time.Time // when the connection was accepted
	answered int       // requests answered

	size  [4]byte // the size field of the request being read
	frame []byte  // the request being read or answered
	held  int64   // request memory taken for frame (reqMem)
	// charge is the request memory taken for decoding and answering the
	// frame (decodeCharge, from decodeMem).
	charge int64

	// Buffer sizes the last response and fetch used: the next ones
	// start there (a class size), growing if they need more.
	outSize, fetchSize int

	// replies are the answers on their way to the writer, in request
	// order; writerDone is closed when the writer stops, writeErr (read
	// after writerDone) saying why if a write failed.
	replies    chan reply
	writerDone chan struct{}
	// sendfile sends a file region on the socket without a copy; nil
	// when the socket cannot (TLS, other systems). vec is the writer's
	// vector of byte slices for one writev.
	sendfile  func(storage.Region) error
	vec       net.Buffers
	writeErr  error
	unwritten atomic.Int32 // answers handed to the writer and not yet written (0: the writer is idle)
	// unwrittenBytes is the buffer memory those answers hold (an
	// acks=all produce's answer counts for nothing until encoded).
	unwrittenBytes atomic.Int64
	writesDone     bool // replies is closed (finishWrites)
}

// connPipeline bounds the answers of one connection waiting to be
// written (produces waiting for their fsync, mostly). Kafka clients
// keep at most 5 requests in flight per connection by default.
const connPipeline = 16

// connUnwrittenBytes bounds the memory of a connection's unwritten
// answers beyond the next one: while they hold this much, the
// connection handles no request until they are written. A client that
// pipelines Fetches (or Produces answered with many errors) and does
// not read the answers so holds one large answer (a Fetch's up to
// MaxFetchBytes), not connPipeline of them; acks=all produces still
// pipeline, their small answers counting only once encoded. Kafka reads
// no request of a connection while its previous answer is unsent
// (SocketServer mutes the channel).
const connUnwrittenBytes = 1 << 20

// connReadBuffer is the size of a connection's read buffer: most
// requests arrive in one read; larger frames are read straight into
// their own buffer.
const connReadBuffer = 16 << 10

// serveConn answers the requests of a connection from ip, in order,
// until it closes, sends something unusable, idles out or is too slow.
func (s *Server) serveConn(nc net.Conn, ip string, accepted time.Time) {
	cn := &conn{
		s:          s,
		nc:         nc,
		r:          bufio.NewReaderSize(nc, connReadBuffer),
		log:        s.cfg.Logger.With("remote", nc.RemoteAddr().String()),
		cl:         client{host: ip, files: &fetchFiles{all: &s.fetchFiles, limit: int64(s.cfg.MaxFetchFiles)}},
		accepted:   accepted,
		replies:    make(chan reply, connPipeline),
		writerDone: make(chan struct{}),
	}
	cn.cl.auth = s.newConnAuth(nc)
	cn.cl.peer = newPeerWatch(s.ctx, nc, cn.r)
	if !s.noZeroCopy.Load() {
		cn.sendfile = sendfileTo(nc)
	}
	go cn.writeReplies()
	defer cn.close()
	for {
		req, err := cn.readRequest()
		if err != nil {
			var slow *slowError
			if isTimeout(err) && !errors.As(err, &slow) && cn.unwritten.Load() > 0 {
				// No request, but an answer is still being written: the
				// connection is busy, not idle; the write has its own
				// deadline.
				continue
			}
			if peerClosed(err) && cn.unwritten.Load() > 0 {
				// The client left while answers wait (acks=all produces
				// waiting for their fsync): no one will read them, so
				// their waits end now rather than at their deadlines.
				cn.s.metrics.peerGone.Add(1)
				cn.cl.peer.end()
			}
			// Let the writer finish (each answer bounded by its own
			// deadline), so that a connection the writer closed ends
			// with the write's error.
			cn.finishWrites()
			if cn.writeErr != nil {
				err = cn.writeErr
			}
			cn.ended(err)
			return
		}
		if req == nil { // a raw SASL token, answered
			continue
		}
		if err := cn.answer(req); err != nil {
			cn.ended(err)
			return
		}
		if cn.cl.hangUp {
			return
		}
	}
}

// readRequest waits up to IdleTimeout for a request to start, then reads
// and decodes it; from its first byte the whole request must arrive
// within RequestTimeout. The first request must arrive whole within
// RequestTimeout of the connection's acceptance. Until the connection
// authenticates (when the server requires it), a request may be at most
// MaxUnauthenticatedRequestBytes: a larger size closes the connection
// before any request memory is taken, and a request other than
// ApiVersions or SASL closes it before its body is decoded
// (preauthGate). After a SaslHandshake
// v0 the next frame is a bare SASL token: it is answered here, and
// readRequest returns no request and no error.
func (cn *conn) readRequest() (*request, error) {
	cfg := &cn.s.cfg
	var deadline time.Time
	if cn.answered == 0 {
		deadline = cn.accepted.Add(cfg.RequestTimeout)
		_ = cn.nc.SetReadDeadline(deadline)
		if _, err := cn.r.Peek(1); err != nil {
			return nil, &slowError{err}
		}
	} else {
		_ = cn.nc.SetReadDeadline(time.Now().Add(cfg.IdleTimeout))
		if _, err := cn.r.Peek(1); err != nil {
			return nil, err
		}
		deadline = time.Now().Add(cfg.RequestTimeout)
		_ = cn.nc.SetReadDeadline(deadline)
	}
	if _, err := io.ReadFull(cn.r, cn.size[:]); err != nil {
		return nil, &slowError{err}
	}
	n := int64(binary.BigEndian.Uint32(cn.size[:]))
	if a := cn.cl.auth; a != nil && a.raw {
		if err := cn.flush(); err != nil { // the handshake's answer goes first
			return nil, err
		}
		return nil, cn.s.rawSASL(&cn.cl, cn.nc, cn.r, n)
	}
	if n < 8 || n > int64(cfg.MaxRequestBytes) {
		return nil, &FrameError{Reason: fmt.Sprintf("request size %d outside [8, %d]", n, cfg.MaxRequestBytes), noHeader: true}
	}
	if a := cn.cl.auth; a != nil && n > int64(cfg.MaxUnauthenticatedRequestBytes) && !cn.s.authenticated(a) {
		cn.s.auth.oversized.Add(1)
		return nil, &FrameError{Reason: fmt.Sprintf("request size %d before authentication, more than %d", n, cfg.MaxUnauthenticatedRequestBytes), noHeader: true}
	}
	if err := cn.readFrame(int(n), deadline); err != nil {
		return nil, &slowError{err}
	}
	if a := cn.cl.auth; a != nil && !cn.s.authenticated(a) {
		if err := cn.s.preauthGate(a, cn.frame); err != nil {
			return nil, err
		}
	}
	if err := cn.chargeDecode(deadline); err != nil {
		return nil, err
	}
	return decodeRequest(cn.frame)
}

// chargeDecode takes the request memory that decoding the frame may
// allocate (decodeCharge), held with the frame's until it is answered.
// It comes from decodeMem, not from the frames' budget: a complete
// frame waiting there behind a growing one (first come, first served)
// would wait for a frame that waits for it, until the request deadline.
// Charges wait only for requests being decoded, handled or answered,
// which need no more memory to finish. A request that could never get
// its charge closes the connection.
func (cn *conn) chargeDecode(deadline time.Time) error {
	mem := cn.s.decodeMem
	n, err := cn.s.decodeCharge(cn.frame)
	if err != nil {
		return err
	}
	if n > mem.limit {
		return chargeError(cn.frame, n, mem.limit)
	}
	if err := mem.acquire(n, deadline, cn.s.ctx.Done()); err != nil {
		return &slowError{err}
	}
	cn.charge = n
	return nil
}

// readFrame reads an n-byte frame into cn.frame. The buffer grows as
// bytes arrive (to what is already buffered, at least 4 KiB, then
// doubling), taking request memory from the server's budget before each
// step, so a size header claiming more than the peer sends costs
// nothing until the bytes are here.
func (cn *conn) readFrame(n int, deadline time.Time) error {
	want := min(n, max(cn.r.Buffered(), 1<<minBufClass))
	for len(cn.frame) < n {
		if len(cn.frame) == cap(cn.frame) {
			if err := cn.grow(want, deadline); err != nil {
				return err
			}
			want = min(n, 2*cap(cn.frame))
		}
		k, err := io.ReadFull(cn.r, cn.frame[len(cn.frame):min(cap(cn.frame), n)])
		cn.frame = cn.frame[:len(cn.frame)+k]
		if err != nil {
			return err
		}
	}
	return nil
}

// grow replaces the frame buffer with one of at least want bytes: a
// pooled class size when one fits the budget, else exactly want.
func (cn *conn) grow(want int, deadline time.Time) error {
	mem := cn.s.reqMem
	size := classSize(want)
	if size == 0 || cn.held+int64(size) > mem.limit {
		size = want
	}
	if err := mem.acquire(int64(size), deadline, cn.s.ctx.Done()); err != nil {
		return err
	}
	old := cn.frame
	cn.frame = append(cn.s.bufs.get(size), old...)
	cn.held += int64(size)
	if old != nil {
		cn.s.bufs.put(old)
		mem.release(int64(cap(old)))
		cn.held -= int64(cap(old))
	}
	return nil
}

// joinWaiting gives back, as a JoinGroup (body) starts waiting for its
// group, what it does not need while it waits: of its decode charge,
// its protocols' metadata at its size (charged so by scanJoinGroup's
// groupElements), and its frame.
// The group has copied what it keeps of the request (its strings and
// protocol metadata), holding it within MaxGroupBytes; decoding copied
// the request's strings, and its protocols and unknown tags, the only
// parts of it that point into the frame, are dropped before the frame
// goes back to the pool, where another connection may reuse it. The
// charge for the decoded structs and the answer is kept. Without this,
// members waiting for their group held their frames and whole charges:
// 2000 members of 100 KiB metadata filled the default budgets.
func (cn *conn) joinWaiting(body *kmsg.JoinGroupRequest) {
	// The metadata's size, read from the decoded request (the frame
	// is not scanned again), before its protocols are dropped.
	var meta int64
	for _, p := range body.Protocols {
		meta += int64(len(p.Metadata))
	}
	if meta = min(meta, cn.charge); meta > 0 {
		cn.s.decodeMem.release(meta)
		cn.charge -= meta
	}
	body.Protocols, body.UnknownTags = nil, kmsg.Tags{}
	cn.s.bufs.put(cn.frame)
	cn.frame = nil
	cn.s.reqMem.release(cn.held)
	cn.held = 0
}

// releaseFrame gives the frame's buffer back to the pool and its memory
// back to the budget.
func (cn *conn) releaseFrame() {
	if cn.frame != nil {
		cn.s.bufs.put(cn.frame)
		cn.frame = nil
	}
	cn.s.reqMem.release(cn.held)
	cn.s.decodeMem.release(cn.charge)
	cn.held, cn.charge = 0, 0
}

// answer handles one request and hands its response to the writer. A
// produce that waits for durability is handed over unanswered: the
// writer waits, then encodes its response.
func (cn *conn) answer(req *request) error {
	s := cn.s
	if cn.unwrittenBytes.Load() >= connUnwrittenBytes {
		s.metrics.unwrittenWaits.Add(1)
		if err := cn.flush(); err != nil {
			return err
		}
	}
	if req.key == kmsg.Fetch.Int16() {
		cn.cl.fetch = s.bufs.get(max(cn.fetchSize, 1<<minBufClass))
		cn.cl.zeroCopy = cn.sendfile != nil
	}
	started := s.cfg.Now()
	cn.cl.id = req.clientID
	if body, ok := req.body.(*kmsg.JoinGroupRequest); ok {
		cn.cl.joinWaiting = func() { cn.joinWaiting(body) }
	}
	resp, err := s.handle(&cn.cl, req)
	cn.cl.joinWaiting = nil
	if cn.cl.peer.stop() {
		// The client went away while the handler waited: the answer
		// (if any) is still written, then the connection ends.
		s.metrics.peerGone.Add(1)
		cn.cl.hangUp = true
	}
	wait := cn.cl.durable
	cn.cl.durable = nil
	if wait == nil || err != nil {
		s.metrics.request(req.key, s.cfg.Now().Sub(started), err != nil)
	}
	if err != nil {
		return err
	}
	cn.answered++
	var r reply
	switch {
	case resp == nil: // an acks=0 produce, which gets no response
	case wait != nil:
		// Its response is kept until the writer encodes it: so is the
		// request memory charged for it.
		r.charge, r.mem = cn.charge, s.decodeMem
		cn.charge = 0
		r.finish = func() []byte {
			wait.finish(cn.cl.peer.ctx)
			s.metrics.request(req.key, s.cfg.Now().Sub(started), false)
			return appendResponse(s.bufs.get(1<<minBufClass), req.correlation, resp)
		}
	default:
		out := s.bufs.get(max(cn.outSize, 1<<minBufClass))
		if f, ok := resp.(*kmsg.FetchResponse); ok {
			// The record sets are not copied into out: the writer
			// writes them from the fetch buffer (which it gives back
			// once written) or sends them from the segment files.
			if cn.cl.fetch != nil {
				cn.fetchSize = sizeOf(len(cn.cl.fetch))
				cn.cl.fetch = s.fitFetch(f, cn.cl.fetch)
			}
			r.out, r.holes = appendFetchResponse(out, req.correlation, f, cn.cl.regions, nil)
			r.files = cn.cl.files
			cn.cl.regions = cn.cl.regions[:0]
			if cn.cl.fetch != nil {
				r.fetch, cn.cl.fetch = cn.cl.fetch, nil
				r.copied, r.copies, cn.cl.copied = cn.cl.copied, s.copied, 0
			}
		} else {
			r.out = appendResponse(out, req.correlation, resp)
		}
		cn.outSize = sizeOf(len(r.out))
	}
	cn.releaseFrame()
	cn.cl.zeroCopy = false
	cn.cl.closeRegions() // a fetch's, if its answer did not take them
	if cn.cl.fetch != nil {
		cn.fetchSize = sizeOf(len(cn.cl.fetch))
		s.bufs.put(cn.cl.fetch)
		cn.cl.fetch = nil
		s.copied.put(cn.cl.copied)
		cn.cl.copied = 0
	}
	if r.out == nil && r.finish == nil {
		return nil
	}
	return cn.send(r)
}

// reply is one answer on its way to the client: its encoded bytes, or
// the function that waits for it and encodes it; a barrier only
// reports when everything before it has been written. A Fetch answer's
// record sets are holes in out, written from fetch (the buffer they
// were read into) or sent from segment files.
type reply struct {
	out     []byte
	finish  func() []byte
	barrier chan struct{}
	holes   []hole
	fetch   []byte
	copied  int64        // record bytes in fetch, taken from copies
	copies  *copiedBytes // nil when copied is 0
	charge  int64        // request memory of a response encoded by finish, taken from mem
	mem     *byteBudget  // nil when charge is 0
	files   *fetchFiles  // counts the descriptors of holes
	held    int64        // cap(out) + cap(fetch) when handed to the writer (conn.unwrittenBytes)
}

// release gives back what r holds: its buffers and files.
func (r *reply) release(bufs *bufPool) {
	if r.out != nil {
		bufs.put(r.out)
	}
	if r.fetch != nil {
		bufs.put(r.fetch)
	}
	if r.copied > 0 {
		r.copies.put(r.copied)
	}
	if r.charge > 0 {
		r.mem.release(r.charge)
	}
	n := 0
	for _, h := range r.holes {
		if h.file.File != nil {
			h.file.File.Close()
			n++
		}
	}
	if n > 0 {
		r.files.put(n)
	}
	*r = reply{}
}

// send hands r to the writer, waiting while connPipeline answers are
// already waiting; it fails once the writer has stopped. An answer
// ready to go (not a produce waiting for its fsync) with nothing ahead
// of it is written here instead: the writer is idle then (it counts an
// answer written only once its write has returned), and waking it
// would add a hand-off between goroutines to every round trip of a
// client that waits for each answer, as a consumer waits for each fetch.
func (cn *conn) send(r reply) error {
	if r.barrier == nil && r.finish == nil && cn.unwritten.Load() == 0 && !cn.writesDone {
		err := cn.writeOne(&r)
		r.release(&cn.s.bufs)
		if err != nil {
			cn.nc.Close()
			return &writeError{err}
		}
		return nil
	}
	if r.barrier == nil {
		cn.unwritten.Add(1)
	}
	r.held = int64(cap(r.out) + cap(r.fetch))
	cn.unwrittenBytes.Add(r.held)
	select {
	case cn.replies <- r:
		return nil
	case <-cn.writerDone:
		return cn.unsent(&r)
	default:
	}
	// connPipeline answers wait: the reader pauses until the writer
	// takes one. It reads no request meanwhile, but watches the socket
	// (peerWatch), so a client that leaves ends the answers' waits and
	// frees the connection at once rather than at IdleTimeout.
	ctx := cn.cl.peer.context()
	select {
	case cn.replies <- r:
		if cn.cl.peer.stop() {
			cn.s.metrics.peerGone.Add(1)
			cn.cl.hangUp = true
		}
		return nil
	case <-cn.writerDone:
		cn.cl.peer.stop()
		return cn.unsent(&r)
	case <-ctx.Done():
	}
	if cn.cl.peer.stop() {
		cn.s.metrics.peerGone.Add(1)
		if r.barrier == nil {
			cn.unwritten.Add(-1)
		}
		cn.unwrittenBytes.Add(-r.held)
		r.release(&cn.s.bufs)
		return errPeerGone
	}
	select { // the server is closing: the writer's waits end
	case cn.replies <- r:
		return nil
	case <-cn.writerDone:
		return cn.unsent(&r)
	}
}

// unsent gives back what r holds, the writer having stopped (a write
// failed) before taking it: no one else would, and a Fetch answer's
// copied record bytes would stay taken for the server's life.
func (cn *conn) unsent(r *reply) error {
	cn.unwrittenBytes.Add(-r.held)
	r.release(&cn.s.bufs)
	return cn.writeErr
}

// errPeerGone: the client closed the connection while the reader was
// paused, its answers waiting to be written.
var errPeerGone = errors.New("the client closed the connection while its answers waited")

// flush returns once every answer handed to the writer is written.
func (cn *conn) flush() error {
	done := make(chan struct{})
	if err := cn.send(reply{barrier: done}); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-cn.writerDone:
		return cn.writeErr
	}
}

// finishWrites stops handing answers to the writer and waits until it
// has written those it has, or failed. Called again, it returns at once.
func (cn *conn) finishWrites() {
	if !cn.writesDone {
		cn.writesDone = true
		close(cn.replies)
	}
	<-cn.writerDone
}

// writeReplies writes the answers in order until the reader closes
// replies or a write fails; a failed write closes the socket, which
// stops the reader too.
func (cn *conn) writeReplies() {
	defer close(cn.writerDone)
	for r := range cn.replies {
		if r.barrier != nil {
			close(r.barrier)
			continue
		}
		if r.finish != nil {
			r.out = r.finish()
		}
		err := cn.writeOne(&r)
		cn.unwrittenBytes.Add(-r.held)
		r.release(&cn.s.bufs)
		if err == nil {
			cn.unwritten.Add(-1) // on failure it stays: the reader waits for writerDone
		}
		if err != nil {
			cn.writeErr = &writeError{err}
			cn.nc.Close()
			return
		}
	}
}

// writeOne writes r within the write deadline (IdleTimeout).
func (cn *conn) writeOne(r *reply) error {
	_ = cn.nc.SetWriteDeadline(time.Now().Add(cn.s.cfg.IdleTimeout))
	return cn.write(r)
}

// write writes r: out, with its holes filled in order. Bytes go out
// together (writev); a file region goes out with sendfile between them.
func (cn *conn) write(r *reply) error {
	if len(r.holes) == 0 {
		_, err := cn.nc.Write(r.out)
		return err
	}
	vec := cn.vec[:0]
	defer func() { cn.vec = vec[:0] }()
	prev := 0
	for _, h := range r.holes {
		vec = append(vec, r.out[prev:h.at])
		prev = h.at
		if h.file.File == nil {
			vec = append(vec, h.data)
			continue
		}
		v := vec
		if _, err := v.WriteTo(cn.nc); err != nil {
			return err
		}
		vec = vec[:0]
		if err := cn.sendfile(h.file); err != nil {
			return err
		}
		cn.s.metrics.fetchZeroCopy.Add(uint64(h.file.Len))
	}
	vec = append(vec, r.out[prev:])
	v := vec
	_, err := v.WriteTo(cn.nc)
	return err
}

// sizeOf is the buffer size to start with next time, n bytes having
// been used this time: the class that holds n, at most the largest
// class (a buffer grows as it is filled; a rare large response does not
// make the next ones allocate its size).
func sizeOf(n int) int {
	if c := classSize(n); c != 0 {
		return c
	}
	return 1 << maxBufClass
}

// close writes the answers still waiting (each bounded by its own
// deadline and the write deadline), releases what the connection holds
// and closes its socket.
func (cn *conn) close() {
	cn.finishWrites() // before the context ends: a client still there gets true answers
	cn.cl.peer.end()
	for r := range cn.replies { // left by a writer that failed
		r.release(&cn.s.bufs)
	}
	cn.cl.closeRegions()
	cn.releaseFrame()
	if cn.cl.fetch != nil {
		cn.s.bufs.put(cn.cl.fetch)
		cn.cl.fetch = nil
		cn.s.copied.put(cn.cl.copied)
		cn.cl.copied = 0
	}
	cn.nc.Close()
}

// slowError: a request started, or was due on a new connection, but did
// not arrive whole (the peer closed, stalled past the request deadline,
// or no request memory came in time).
type slowError struct{ err error }

func (e *slowError) Error() string { return "request incomplete: " + e.err.Error() }
func (e *slowError) Unwrap() error { return e.err }

// writeError: a response could not be written.
type writeError struct{ err error }

func (e *writeError) Error() string { return "write failed: " + e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// ended logs and counts why a connection ended: a bad request, a
// request too slow to arrive, idleness, or (debug) a response it did
// not take or an ordinary end.
func (cn *conn) ended(err error) {
	s := cn.s
	var (
		fe   *FrameError
		slow *slowError
		we   *writeError
	)
	switch {
	case s.isClosed():
	case errors.As(err, &fe):
		s.metrics.badFrames.Add(1)
		s.warnings.badRequest.warn(cn.log, s.cfg.Now(), s.cfg.WarnLogGap, "logd: closing connection: bad request", "client", cn.cl.id, "err", err)
	case errors.As(err, &slow) && (isTimeout(err) || errors.Is(err, errNoMemory)):
		s.metrics.slowRequests.Add(1)
		if errors.Is(err, errNoMemory) {
			s.starved()
		}
		s.warnings.slowRequest.warn(cn.log, s.cfg.Now(), s.cfg.WarnLogGap, "logd: closing connection: request not complete in time", "timeout", s.cfg.RequestTimeout, "err", err)
	case errors.As(err, &we): // a timeout here is a client not reading its responses
		cn.log.Debug("logd: closing connection: writing a response failed", "err", err)
	case isTimeout(err):
		s.metrics.idleClosed.Add(1)
		cn.log.Debug("logd: closing idle connection", "timeout", s.cfg.IdleTimeout)
	default:
		cn.log.Debug("logd: connection ended", "err", err)
	}
}

// peerClosed: a read failed because the client closed the connection
// or it broke — not a timeout, not a bad request, not the socket
// closed on this side.
func peerClosed(err error) bool {
	var ne net.Error
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne) && !ne.Timeout()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// handle answers one request. An error means the connection must close:
// an unknown API key or an unsupported version (except ApiVersions,
// which always gets an answer so the client can learn what we speak).
func (s *Server) handle(cl *client, req *request) (kmsg.Response, error) {
	if a := cl.auth; a != nil && a.session != nil && req.key != kmsg.SASLAuthenticate.Int16() && req.key != kmsg.SASLHandshake.Int16() {
		// A SASL exchange is under way: only SaslAuthenticate may come
		// (a SaslHandshake is answered ILLEGAL_SASL_STATE first).
		s.saslInterrupted(cl, req.key)
		return nil, nil
	}
	if req.key == kmsg.ApiVersions.Int16() {
		return s.apiVersions(req), nil
	}
	if req.body == nil || !supports(req.key, req.version) {
		reason := "unknown API key"
		if r, ok := supported[kmsg.Key(req.key)]; ok {
			reason = fmt.Sprintf("unsupported version (supported: %d to %d)", r.min, r.max)
		}
		return nil, &FrameError{Key: req.key, Version: req.version, Reason: reason}
	}
	return s.authorized(cl, req)
}

// dispatch answers one request with its API's handler.
func (s *Server) dispatch(cl *client, req *request) (kmsg.Response, error) {
	var resp kmsg.Response
	switch body := req.body.(type) {
	case *kmsg.ProduceRequest:
		resp = s.produce(cl, body)
	case *kmsg.FetchRequest:
		resp = s.fetch(cl, body)
	case *kmsg.ListOffsetsRequest:
		resp = s.listOffsets(body)
	case *kmsg.MetadataRequest:
		resp = s.metadata(body)
	case *kmsg.OffsetCommitRequest:
		resp = s.groups.OffsetCommit(body)
	case *kmsg.OffsetFetchRequest:
		resp = s.groups.OffsetFetch(body)
	case *kmsg.FindCoordinatorRequest:
		resp = s.findCoordinator(body)
	case *kmsg.JoinGroupRequest:
		resp = s.groups.JoinGroupWaiting(cl.peer.context(), body, cl.id, cl.host, cl.joinWaiting)
	case *kmsg.HeartbeatRequest:
		resp = s.groups.Heartbeat(body)
	case *kmsg.LeaveGroupRequest:
		resp = s.groups.LeaveGroup(body)
	case *kmsg.SyncGroupRequest:
		resp = s.groups.SyncGroup(cl.peer.context(), body)
	case *kmsg.DescribeGroupsRequest:
		resp = s.groups.DescribeGroups(body)
	case *kmsg.ListGroupsRequest:
		resp = s.groups.ListGroups(body)
	case *kmsg.CreateTopicsRequest:
		resp = s.createTopics(body)
	case *kmsg.DeleteTopicsRequest:
		resp = s.deleteTopics(body)
	case *kmsg.InitProducerIDRequest:
		resp = s.initProducerID(body)
	case *kmsg.DescribeConfigsRequest:
		resp = s.describeConfigs(body)
	case *kmsg.SASLHandshakeRequest:
		resp = s.saslHandshake(cl, body)
	case *kmsg.SASLAuthenticateRequest:
		resp = s.saslAuthenticate(cl, body)
	default:
		return nil, &FrameError{Key: req.key, Version: req.version, Reason: "no handler"}
	}
	if resp == nil {
		return nil, nil
	}
	resp.SetVersion(req.version)
	return resp, nil
}
