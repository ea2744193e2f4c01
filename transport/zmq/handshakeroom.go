package zmq

import (
	"net"
	"slices"
	"time"
)

// inHandshake is an accepted connection in its handshake, and when it
// was accepted.
type inHandshake struct {
	c     net.Conn
	since time.Time
}

// evictAge is how long an accepted connection keeps its place among
// the maxHandshakes in their handshake before a newer one may take it:
// an honest peer's handshake takes a few round trips. A libzmq SUB
// (4.3) whose connection is closed, in its handshake or after, sends
// its subscriptions again on the next one only when its application
// next calls into the socket (the reconnect's hiccup is processed in
// the application's thread): one not reading yet stays connected and
// is sent nothing until it does. So a socket at maxHandshakes leaves
// new connections in the listen backlog while they wait, instead of
// closing one.
func (s *socket) evictAge() time.Duration { return min(s.handshake/2, time.Second) }

// waitHandshakeRoom waits, before the next accept, until fewer than
// maxHandshakes accepted connections are in their handshake or the
// oldest of them is evictAge old (track then closes it). It reports
// false when the socket closes.
func (s *socket) waitHandshakeRoom() bool {
	for {
		ch := s.handshakeRoom.wait()
		s.mu.Lock()
		var wait time.Duration
		if s.handshaking >= s.maxHandshakes && len(s.inHandshake) > 0 {
			wait = time.Until(s.inHandshake[0].since.Add(s.evictAge()))
		}
		s.mu.Unlock()
		if wait <= 0 {
			return true
		}
		t := time.NewTimer(wait)
		select {
		case <-ch:
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			return false
		}
		t.Stop()
	}
}

// handshakeOver takes c out of inHandshake; s.mu is held.
func (s *socket) handshakeOver(c net.Conn) {
	if i := slices.IndexFunc(s.inHandshake, func(h inHandshake) bool { return h.c == c }); i >= 0 {
		s.inHandshake = slices.Delete(s.inHandshake, i, i+1)
	}
	s.handshakeRoom.notify()
}
