package zmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"

	"github.com/brokerless/brokerless/transport"
)

// role is what a socket type does with its peers: a publisher tracks
// their subscriptions, a subscriber hands on what they send, and so on.
type role interface {
	// attach is called for each new peer before its reader and writer
	// run; an error refuses the peer.
	attach(p *peer) error
	// received is called from the peer's reader for each message.
	// An error closes the connection.
	received(p *peer, frames [][]byte) error
	// detach is called once the peer's reader and writer have returned.
	detach(p *peer)
}

// socketConfig is what a socket needs of a Config.
type socketConfig struct {
	typ        zmq4.SocketType
	role       role
	maxMessage int
	// maxWireFrame, if over maxMessage, is the longest message frame
	// taken, cut to maxMessage (wireConn.truncateFrames).
	maxWireFrame int
	pending      int           // MaxPendingBytes
	frameTime    time.Duration // FrameTimeout
	// pingInterval, pingTimeout and pingTTL are PingInterval,
	// PingTimeout and PingTTL.
	pingInterval, pingTimeout, pingTTL time.Duration
	queueItems                         int
	queueBytes                         int
	maxPeers                           int
	maxHandshakes                      int
	handshake                          time.Duration
	reconnect                          time.Duration
	reconnMax                          time.Duration
	log                                *slog.Logger
	// onIdle, if set, is called when a peer's writer has written
	// everything queued for it.
	onIdle func()
}

// socket is a ZeroMQ socket of our own over go-zeromq/zmq4's ZMTP
// connections: zmq4's socket types share one queue among all peers
// (#151), redial only the last endpoint, and take no deadline (#37,
// #74). A socket binds and connects to any number of endpoints, redials
// every connected endpoint with exponential backoff for as long as it
// is open, and gives each peer its own bounded queue and writer.
type socket struct {
	socketConfig
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	listeners []net.Listener
	conns     map[net.Conn]connState // every open connection
	// handshaking and admitted count the accepted connections in their
	// handshake (bounded by maxHandshakes) and past it (by maxPeers):
	// connections that never finish a handshake (a port probe, a peer
	// of another protocol) keep no peer out.
	handshaking, admitted int
	// inHandshake are the accepted connections in their handshake,
	// oldest first: the first makes room for a new one beyond
	// maxHandshakes.
	inHandshake []inHandshake
	// handshakeRoom is notified when one of them ends its handshake.
	handshakeRoom broadcast
	peers         map[*peer]struct{} // those past the handshake
	ipcPaths      []string

	// progress is notified when a peer wrote something.
	progress broadcast
	// peersChanged is notified when a peer comes or goes.
	peersChanged broadcast

	// pending bounds the large frames announced and not yet received.
	pending *pendingBudget

	stats socketStats
}

// socketStats are a socket's connection counters.
type socketStats struct {
	accepted, dialed, refused, handshakeFailed, dialFailed, disconnected atomic.Uint64
	// frameTimeouts counts connections failed for a large frame whose
	// body, or room in the pending budget, did not come in time.
	frameTimeouts atomic.Uint64
	// heartbeatTimeouts counts connections closed because the peer sent
	// nothing within PingTimeout of our PING, or within the TTL of its
	// own; pongsCoalesced the PINGs answered by a later PONG, as the
	// peer sent them faster than they could be answered.
	heartbeatTimeouts, pongsCoalesced atomic.Uint64
	// tooLarge counts connections failed for a message over
	// MaxMessageBytes or of too many frames (ErrFrameTooLarge).
	tooLarge atomic.Uint64
	// attachRefused counts peers refused after their handshake by the
	// socket's role (a subscription set their queue cannot hold, a
	// worker's peer that is not a balancer).
	attachRefused atomic.Uint64
	// discarded counts transport messages queued for a peer and not
	// written when its connection closed; discardedZMTP the ZMTP
	// messages they were in.
	discarded, discardedZMTP atomic.Uint64
}

// discard counts msgs, queued for a peer and not written.
func (st *socketStats) discard(msgs []zmsg) {
	for i := range msgs {
		if n := msgs[i].msgs; n > 0 {
			st.discarded.Add(uint64(n))
			st.discardedZMTP.Add(1)
		}
	}
}

func newSocket(cfg socketConfig) *socket {
	ctx, cancel := context.WithCancel(context.Background())
	return &socket{
		socketConfig: cfg,
		ctx:          ctx,
		cancel:       cancel,
		conns:        map[net.Conn]connState{},
		peers:        map[*peer]struct{}{},
		pending:      newPendingBudget(cfg.pending),
	}
}

// listen binds e and accepts its peers until the socket closes.
func (s *socket) listen(e endpoint) (net.Addr, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(s.ctx, e.network, e.addr)
	if err != nil && e.network == "unix" && errors.Is(err, syscall.EADDRINUSE) && removeStaleSocket(e.addr) {
		s.log.Debug("zmq: removed a stale socket file", "path", e.addr)
		l, err = lc.Listen(s.ctx, e.network, e.addr)
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return nil, errClosedSocket
	}
	s.listeners = append(s.listeners, l)
	if e.network == "unix" {
		s.ipcPaths = append(s.ipcPaths, e.addr)
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go s.acceptLoop(l)
	return l.Addr(), nil
}

var errClosedSocket = errors.New("zmq: socket closed")

func (s *socket) acceptLoop(l net.Listener) {
	defer s.wg.Done()
	for {
		if !s.waitHandshakeRoom() {
			return
		}
		c, err := l.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			// Out of descriptors, say: wait a little, as net/http does.
			if !s.sleep(10 * time.Millisecond) {
				return
			}
			continue
		}
		s.stats.accepted.Add(1)
		if !s.track(c, true) {
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c, true)
		}()
	}
}

// dial connects to e, and again whenever the connection ends or fails,
// after a backoff that doubles from the reconnect interval up to its
// maximum, with jitter, and starts again from the interval once a
// handshake succeeds; until the socket closes.
func (s *socket) dial(e endpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.wg.Add(1)
	go s.dialLoop(e)
}

func (s *socket) dialLoop(e endpoint) {
	defer s.wg.Done()
	backoff := s.reconnect
	var d net.Dialer
	for s.ctx.Err() == nil {
		c, err := d.DialContext(s.ctx, e.network, e.addr)
		if err != nil {
			s.stats.dialFailed.Add(1)
		} else if s.track(c, false) {
			s.stats.dialed.Add(1)
			if s.serve(c, false) {
				backoff = s.reconnect
			}
		}
		// Jitter spreads the reconnects of many sockets: [b/2, b).
		if !s.sleep(backoff/2 + rand.N(backoff/2+1)) {
			return
		}
		backoff = min(2*backoff, s.reconnMax)
	}
}

// sleep waits d, or until the socket closes (false).
func (s *socket) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// connState is where an open connection is: dialed, or accepted and in
// its handshake, past it, or closed in it to make room (evicted).
type connState uint8

const (
	connDialed connState = iota
	connHandshaking
	connAdmitted
	connEvicted
)

// track records c as open, or closes it if the socket is closed or has
// maxPeers accepted connections past their handshake (a socket dials
// its own endpoints). Refused before its handshake, a peer backs off
// before redialling; after, it would redial at once. Beyond
// maxHandshakes accepted connections in their handshake, the oldest is
// closed to make room: refusing the new one instead let as few as
// maxHandshakes connections that never finish one (a slowloris) keep
// every peer out, where the oldest is the likeliest never to finish.
// The accept loop waits first until it is evictAge old
// (waitHandshakeRoom), so an honest peer's handshake is not cut.
func (s *socket) track(c net.Conn, accepted bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || accepted && s.admitted >= s.maxPeers {
		s.stats.refused.Add(1)
		c.Close()
		return false
	}
	st := connDialed
	if accepted {
		if s.handshaking >= s.maxHandshakes {
			old := s.inHandshake[0].c
			s.inHandshake = slices.Delete(s.inHandshake, 0, 1)
			s.conns[old] = connEvicted
			s.handshaking--
			s.stats.refused.Add(1)
			old.Close()
		}
		st = connHandshaking
		s.handshaking++
		s.inHandshake = append(s.inHandshake, inHandshake{c, time.Now()})
	}
	s.conns[c] = st
	return true
}

// admit moves an accepted connection past its handshake, if the socket
// has fewer than maxPeers such (others may have taken the places left
// during its handshake); it reports whether it did (a dialed connection
// always is).
func (s *socket) admit(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.conns[c] {
	case connEvicted:
		return false
	case connHandshaking:
	default:
		return true
	}
	if s.admitted >= s.maxPeers {
		s.stats.refused.Add(1)
		return false
	}
	s.handshakeOver(c)
	s.handshaking--
	s.admitted++
	s.conns[c] = connAdmitted
	return true
}

// serve does the handshake on c and runs the peer until it ends. It
// reports whether the handshake succeeded and the role took the peer.
func (s *socket) serve(c net.Conn, server bool) bool {
	defer s.untrack(c)
	p := newPeer(s, c)
	// A large frame read ahead during the handshake may hold some of
	// the pending budget, whatever becomes of the connection.
	defer p.wc.release()
	p.wc.handshakeDeadline(time.Now().Add(s.handshake))
	zc, err := openZMTP(p.wc, s.typ, server)
	if err != nil {
		s.stats.handshakeFailed.Add(1)
		s.log.Debug("zmq: handshake failed", "remote", p.remote, "err", err)
		c.Close()
		return false
	}
	if !s.admit(c) {
		s.log.Debug("zmq: peer refused beyond MaxPeers, or to make room for a newer handshake", "remote", p.remote)
		c.Close()
		return false
	}
	p.wc.handshakeDone()
	p.zc = zc
	p.typ = zmq4.SocketType(zc.Peer.Meta[zmtpSocketType])
	if err := s.role.attach(p); err != nil {
		// Not a success: a connected endpoint backs off, as from a
		// failed handshake, instead of redialling at once.
		s.stats.attachRefused.Add(1)
		s.log.Debug("zmq: peer refused", "remote", p.remote, "err", err)
		c.Close()
		return false
	}
	s.addPeer(p)
	go p.writeLoop()
	err = p.readLoop()
	if errors.Is(err, ErrFrameTooLarge) {
		s.stats.tooLarge.Add(1)
	}
	p.close()
	<-p.writerDone
	s.removePeer(p)
	s.role.detach(p)
	s.stats.disconnected.Add(1)
	s.log.Debug("zmq: peer gone", "remote", p.remote, "type", p.typ, "err", err)
	return true
}

// openZMTP does the ZMTP handshake on c with zmq4. wireConn refuses
// what is known to make zmq4 panic; should something else still do, the
// panic fails this one handshake instead of the process.
func openZMTP(c net.Conn, typ zmq4.SocketType, server bool) (zc *zmq4.Conn, err error) {
	defer func() {
		if r := recover(); r != nil {
			zc, err = nil, fmt.Errorf("%w: zmq4 panicked in the handshake: %v", ErrBadFrame, r)
		}
	}()
	return zmq4.Open(c, null.Security(), typ, nil, server, nil)
}

func (s *socket) untrack(c net.Conn) {
	s.mu.Lock()
	switch s.conns[c] {
	case connHandshaking:
		s.handshakeOver(c)
		s.handshaking--
	case connAdmitted:
		s.admitted--
	}
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

func (s *socket) addPeer(p *peer) {
	s.mu.Lock()
	s.peers[p] = struct{}{}
	s.mu.Unlock()
	s.peersChanged.notify()
}

func (s *socket) removePeer(p *peer) {
	s.mu.Lock()
	delete(s.peers, p)
	s.mu.Unlock()
	s.peersChanged.notify()
	s.progress.notify()
}

// eachPeer calls f for every peer, under the socket's lock: f must not
// block.
func (s *socket) eachPeer(f func(p *peer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.peers {
		f(p)
	}
}

// numPeers is the number of peers past their handshake.
func (s *socket) numPeers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.peers)
}

// waitPeers waits until the socket has at least n peers, or returns
// transport.ErrClosed once the socket is closed.
func (s *socket) waitPeers(ctx context.Context, n int) error {
	for {
		ch := s.peersChanged.wait()
		if s.numPeers() >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.ctx.Done():
			return transport.ErrClosed
		}
	}
}

// waitPeersBelow waits until the socket has fewer than n peers.
func (s *socket) waitPeersBelow(ctx context.Context, n int) error {
	for {
		ch := s.peersChanged.wait()
		if s.numPeers() < n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// close closes every listener and connection and waits for every
// goroutine of the socket to return.
func (s *socket) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return
	}
	s.closed = true
	s.cancel()
	for _, l := range s.listeners {
		l.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	for p := range s.peers {
		p.close()
	}
	paths := s.ipcPaths
	s.mu.Unlock()
	s.wg.Wait()
	for _, path := range paths {
		os.Remove(path)
	}
}

// start binds and connects the endpoints of cfg.
func (s *socket) start(bind, connect []string) error {
	for _, b := range bind {
		e, err := parseEndpoint(b)
		if err != nil {
			return err
		}
		if _, err := s.listen(e); err != nil {
			return fmt.Errorf("zmq: bind %s: %w", b, err)
		}
	}
	for _, c := range connect {
		e, err := parseEndpoint(c)
		if err != nil {
			return err
		}
		s.dial(e)
	}
	return nil
}

// addrs lists the addresses the socket listens on.
func (s *socket) addrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	var as []net.Addr
	for _, l := range s.listeners {
		as = append(as, l.Addr())
	}
	return as
}
