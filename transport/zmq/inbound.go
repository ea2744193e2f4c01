package zmq

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// inbound is the role of a subscribing socket (SUB, and the proxy's XSUB
// side): it tells every publisher it connects to which topic prefixes it
// takes — on connect, and on every change — and hands what they send to
// sink.
type inbound struct {
	// sink takes a message a publisher sent; it may block (the peer then
	// stops reading). An error closes the connection.
	sink func(c *inConn, frames [][]byte) error
	// ended, if set, is told that a connection closed, after sink was
	// given its last message.
	ended func(c *inConn)
	// conns numbers connections, from 1.
	conns atomic.Uint64

	mu   sync.Mutex
	subs map[string]*subEntry
	// maxSubs bounds the prefixes subs holds (0: no bound).
	maxSubs int
	// peers are the publishers told the set, from attach to detach:
	// a change reaches every peer that got the set before it, even one
	// the socket does not list yet.
	peers map[*peer]struct{}
}

// inConn is what inbound keeps about one publisher connection.
type inConn struct {
	peer *peer
	// id is the connection's number, never reused.
	id uint64
	// session numbers the messages of a publisher that sends no header
	// frames, per connection; n is how many it sent.
	session uint64
	n       uint64
	// plain is set once the connection brought a message without a
	// header frame: a later one whose second frame only begins as a
	// header frame does is plain too. Receive's, as n.
	plain bool
	// queued is set once a message of the connection is queued for
	// the application (by its reader).
	queued bool
	// closed is closed when the connection ends.
	closed <-chan struct{}
}

// subEntry is a prefix subscribed, and how many times (libzmq counts a
// prefix subscribed twice), with its subscription message, whose frame
// every publisher's queue shares: a new connection's copy of the set
// costs a queue entry per prefix, not the prefixes again.
type subEntry struct {
	n   int
	msg zmsg
}

var errTooManySubscriptions = errors.New("zmq: more subscriptions than the connection's queue holds")

func newInbound(subscribe []string) *inbound {
	in := &inbound{subs: map[string]*subEntry{}, peers: map[*peer]struct{}{}}
	for _, s := range subscribe {
		in.add(s)
	}
	return in
}

func subscription(add bool, prefix string) zmsg {
	b := make([]byte, 1+len(prefix))
	if add {
		b[0] = 1
	}
	copy(b[1:], prefix)
	m := zmsg{frames: [][]byte{b}}
	m.size = memCost(m.frames)
	return m
}

// add counts prefix subscribed once more. in.mu is held (or in is not
// shared yet).
func (in *inbound) add(prefix string) {
	e := in.subs[prefix]
	if e == nil {
		e = &subEntry{msg: subscription(true, prefix)}
		in.subs[prefix] = e
	}
	e.n++
}

func (in *inbound) attach(p *peer) error {
	p.state = &inConn{peer: p, id: in.conns.Add(1), session: newSession(), closed: p.closing}
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, s := range slices.Sorted(maps.Keys(in.subs)) {
		if !p.out.tryPut(in.subs[s].msg) {
			return errTooManySubscriptions
		}
	}
	in.peers[p] = struct{}{}
	return nil
}

func (in *inbound) detach(p *peer) {
	in.mu.Lock()
	delete(in.peers, p)
	in.mu.Unlock()
	if in.ended != nil {
		in.ended(p.state.(*inConn))
	}
}

func (in *inbound) received(p *peer, frames [][]byte) error {
	return in.sink(p.state.(*inConn), frames)
}

// subscribe adds (or, with add false, removes one count of) a prefix,
// and tells every publisher when its set changes. It refuses a prefix
// not held beyond maxSubs.
func (in *inbound) subscribe(prefix string, add bool) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	var n int
	if e := in.subs[prefix]; e != nil {
		n = e.n
	}
	switch {
	case add && n == 0 && in.maxSubs > 0 && len(in.subs) >= in.maxSubs:
		return badConfig("Subscribe", prefix, fmt.Sprintf("at most %d prefixes are held (MaxSubscriptions)", in.maxSubs))
	case add:
		in.add(prefix)
	case n == 0:
		return nil
	case n > 1:
		in.subs[prefix].n--
	default:
		delete(in.subs, prefix)
	}
	if add && n == 0 || !add && n == 1 {
		// A publisher that cannot take the change is disconnected: it
		// gets the whole set again when the socket reconnects.
		m := subscription(add, prefix)
		if add {
			m = in.subs[prefix].msg
		}
		for p := range in.peers {
			if !p.out.tryPut(m) {
				p.close()
			}
		}
	}
	return nil
}
