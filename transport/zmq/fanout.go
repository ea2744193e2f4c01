package zmq

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// maxPrefix is the longest topic prefix our own subscribers send; a
// publisher takes longer ones, as libzmq's does, within
// subscriptionBytes.
const maxPrefix = 255

// subscriptionBytes bounds the bytes of the prefixes a subscriber of at
// most maxSubscriptions prefixes may hold at a publisher: as many bytes
// as that many prefixes of maxPrefix bytes would take.
func subscriptionBytes(maxSubscriptions int) int { return maxSubscriptions * (maxPrefix + 1) }

// fanoutMaxMessage is the largest message a publishing socket of c holds
// from a subscriber, which sends it subscriptions only: one of a prefix
// one byte longer than it may hold. zmq4 holds a message's frames until
// its last, so MaxMessageBytes would let each of MaxPeers subscribers
// make a publisher hold that much. A longer frame (up to
// MaxMessageBytes, as a libzmq SUB's prefix may be) is cut to this
// length (wireConn.truncateFrames): refused as it would be whole, its
// subscriber sent every topic, and its cancel cut alike.
func fanoutMaxMessage(c *Config) int {
	return min(c.MaxMessageBytes, 2+subscriptionBytes(c.MaxSubscriptions))
}

// fanout is the role of a publishing socket (PUB, and the proxy's XPUB
// side): it keeps each subscriber's topic prefixes, from the
// subscription messages it sends ([1, prefix...] subscribes, [0,
// prefix...] unsubscribes, as ZMTP 3.0 peers and libzmq 4.3 send them),
// and hands each message to the queue of every subscriber with a
// matching prefix, where a full queue drops the message or disconnects
// the subscriber (Config.Slow). It never blocks.
type fanout struct {
	sock             *socket
	slow             SlowPolicy
	maxSubscriptions int
	// onSubscribe, if set, is told when the first subscriber takes a
	// prefix (add) and when the last one leaves it.
	onSubscribe func(prefix string, add bool)
	mu          sync.Mutex
	total       map[string]int // subscribers per prefix, for onSubscribe

	stats fanoutStats
}

type fanoutStats struct {
	dropped, droppedZMTP, slowDisconnects, refusedSubscriptions, ignored atomic.Uint64
	// droppedEnds counts stream ends not queued for a subscriber
	// whose queue held nothing but ends beyond endReserve.
	droppedEnds atomic.Uint64
}

// subscriber is what fanout keeps about one peer.
// A change of its prefixes costs one map entry, whatever it holds; a
// match looks up the topic's own prefixes, of the lengths held.
type subscriber struct {
	mu sync.RWMutex
	// prefixes is a set, as libzmq's PUB keeps it (a set of pipes per
	// prefix): a prefix subscribed twice is held once, and one cancel
	// ends it. libzmq's SUB relies on it: it sends a subscription each
	// time its application subscribes, a cancel only for the last
	// unsubscribe.
	prefixes map[string]struct{}
	// lens counts the prefixes held per length, up to maxPrefix; long
	// those longer, per length.
	lens [maxPrefix + 1]int32
	long map[int]int32
	// bytes is what the prefixes held take, at most subscriptionBytes.
	bytes int
	// all is set while the subscriber wants a prefix beyond what it
	// may hold: it is sent every topic meanwhile. Its own filter sorts
	// them out (libzmq's SUB and our Subscriber filter what they
	// receive, a proxy's fanout per subscriber), where refusing it
	// would lose what it subscribed to. refused is the set of the
	// prefixes refused, within the bounds of prefixes (refusedBytes):
	// a libzmq SUB sends a subscription each time its application
	// subscribes and one cancel for the last unsubscribe, so a prefix
	// refused twice is cancelled once. The prefixes the checker may
	// have cut are counted in cut instead, each subscription and each
	// cancel (two cut to one could not be told apart): one refused
	// twice keeps the subscriber sent every topic, never the reverse.
	// At the last cancel the subscriber is filtered again, unless
	// stuck (refused beyond what refused holds): then it is sent every
	// topic until it disconnects.
	all          bool
	stuck        bool
	cut          int
	refused      map[string]struct{}
	refusedBytes int
	dropped      atomic.Uint64
}

// count counts prefix in (or, with add false, out of) lens, long and
// bytes; s.mu is held.
func (s *subscriber) count(prefix []byte, add bool) {
	n, d := len(prefix), int32(1)
	if !add {
		d = -1
	}
	s.bytes += int(d) * n
	if n <= maxPrefix {
		s.lens[n] += d
		return
	}
	if s.long[n] += d; s.long[n] == 0 {
		delete(s.long, n)
	}
}

func (f *fanout) attach(p *peer) error {
	p.state = &subscriber{prefixes: map[string]struct{}{}, long: map[int]int32{}, refused: map[string]struct{}{}}
	return nil
}

func (f *fanout) detach(p *peer) {
	s := p.state.(*subscriber)
	s.mu.Lock()
	prefixes := slices.Collect(maps.Keys(s.prefixes))
	all := s.all
	s.mu.Unlock()
	for _, pre := range prefixes {
		f.total1(pre, false)
	}
	if all {
		f.total1("", false)
	}
}

// received takes a subscriber's subscription messages; a subscriber
// sends nothing else a publisher uses. As libzmq's PUB (4.3) does, it
// reads every frame of a message that begins with 1 (subscribe) or 0
// (cancel) as one, and ignores the others.
func (f *fanout) received(p *peer, frames [][]byte) error {
	for _, fr := range frames {
		if len(fr) == 0 || fr[0] > 1 {
			f.stats.ignored.Add(1)
			continue
		}
		f.subscribe(p, fr[1:], fr[0] == 1)
	}
	return nil
}

// subscribe adds prefix to (or, with add false, removes it from) what
// the subscriber p holds. Beyond MaxSubscriptions, or their bytes, the
// subscriber is sent everything instead (subscriber.all), until it has
// cancelled what was refused.
func (f *fanout) subscribe(p *peer, prefix []byte, add bool) {
	s := p.state.(*subscriber)
	s.mu.Lock()
	_, had := s.prefixes[string(prefix)]
	switch {
	case !add && !had:
		if f.mayBeCut(prefix) && s.cut > 0 {
			s.cut--
			f.unrefuse(p, s, nil)
			return
		}
		if _, ok := s.refused[string(prefix)]; ok {
			f.unrefuse(p, s, prefix)
			return
		}
		s.mu.Unlock()
		return // not held
	case add && had:
		s.mu.Unlock()
		return // held already
	case add && (len(s.prefixes) >= f.maxSubscriptions || s.bytes+len(prefix) > subscriptionBytes(f.maxSubscriptions)):
		f.refuse(s, prefix)
		first := !s.all
		s.all = true
		s.mu.Unlock()
		f.stats.refusedSubscriptions.Add(1)
		if first {
			f.sock.log.Debug("zmq: subscriber beyond MaxSubscriptions is sent every topic", "remote", p.remote, "max", f.maxSubscriptions)
			f.total1("", true)
			f.sock.peersChanged.notify()
		}
		return
	case add:
		s.prefixes[string(prefix)] = struct{}{}
		s.count(prefix, true)
		if _, ok := s.refused[string(prefix)]; ok {
			// Refused before, held now: one cancel will end it.
			s.mu.Unlock()
			f.total1(string(prefix), add)
			s.mu.Lock()
			f.unrefuse(p, s, prefix)
			return
		}
	default:
		delete(s.prefixes, string(prefix))
		s.count(prefix, false)
	}
	s.mu.Unlock()
	f.total1(string(prefix), add)
	f.sock.peersChanged.notify()
}

// refuse records prefix as refused; s.mu is held.
func (f *fanout) refuse(s *subscriber, prefix []byte) {
	if f.mayBeCut(prefix) {
		s.cut++
		return
	}
	if _, ok := s.refused[string(prefix)]; ok {
		return
	}
	if len(s.refused) >= f.maxSubscriptions || s.refusedBytes+len(prefix) > subscriptionBytes(f.maxSubscriptions) {
		s.stuck = true
		return
	}
	s.refused[string(prefix)] = struct{}{}
	s.refusedBytes += len(prefix)
}

// mayBeCut reports whether prefix may be one the checker cut: as long
// as a cut one (wireConn.truncateFrames).
func (f *fanout) mayBeCut(prefix []byte) bool {
	return f.sock != nil && len(prefix) >= f.sock.maxMessage-1
}

// unrefuse takes prefix, if any, out of the refused ones, and filters
// the subscriber again after the last; s.mu is held, and unlocked.
func (f *fanout) unrefuse(p *peer, s *subscriber, prefix []byte) {
	if prefix != nil {
		delete(s.refused, string(prefix))
		s.refusedBytes -= len(prefix)
	}
	last := s.all && len(s.refused) == 0 && s.cut == 0 && !s.stuck
	if last {
		s.all = false
	}
	s.mu.Unlock()
	if last {
		f.sock.log.Debug("zmq: subscriber back within MaxSubscriptions is filtered again", "remote", p.remote)
		f.total1("", false)
	}
	f.sock.peersChanged.notify()
}

// total1 counts a subscriber taking or leaving prefix.
func (f *fanout) total1(prefix string, add bool) {
	if f.onSubscribe == nil {
		return
	}
	f.mu.Lock()
	n := f.total[prefix]
	if add {
		f.total[prefix] = n + 1
	} else if n <= 1 {
		delete(f.total, prefix)
	} else {
		f.total[prefix] = n - 1
	}
	f.mu.Unlock()
	if add && n == 0 || !add && n == 1 {
		f.onSubscribe(prefix, add)
	}
}

// matches reports whether the subscriber takes topic.
func (s *subscriber) matches(topic []byte) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.all {
		return true
	}
	for n := range min(len(topic), maxPrefix) + 1 {
		if s.lens[n] > 0 {
			if _, ok := s.prefixes[string(topic[:n])]; ok {
				return true
			}
		}
	}
	for n := range s.long {
		if n <= len(topic) {
			if _, ok := s.prefixes[string(topic[:n])]; ok {
				return true
			}
		}
	}
	return false
}

// offer queues m, whose topic frame is topic, for every subscriber that
// takes it.
func (f *fanout) offer(m zmsg, topic []byte) {
	f.sock.eachPeer(func(p *peer) {
		s := p.state.(*subscriber)
		if !s.matches(topic) {
			return
		}
		if m.end {
			// An end is not dropped like data: the subscriber would
			// never learn where the stream stopped, nor report its
			// lost tail.
			ok, msgs, zmtp := p.out.putEnd(m)
			s.dropped.Add(uint64(msgs))
			f.stats.dropped.Add(uint64(msgs))
			f.stats.droppedZMTP.Add(uint64(zmtp))
			if !ok && !p.out.isClosed() {
				f.stats.droppedEnds.Add(1)
			}
			return
		}
		if p.out.tryPut(m) || p.out.isClosed() {
			return // a peer that is closing counts nothing more
		}
		s.dropped.Add(uint64(m.msgs))
		f.stats.dropped.Add(uint64(m.msgs))
		if m.msgs > 0 { // a heartbeat is lost uncounted: the next says the same
			f.stats.droppedZMTP.Add(1)
		}
		if f.slow == Disconnect {
			f.stats.slowDisconnects.Add(1)
			p.close()
		}
	})
}

// anyIdle reports whether some subscriber has nothing queued, or there
// is none.
func (f *fanout) anyIdle() bool {
	peers, idle := 0, false
	f.sock.eachPeer(func(p *peer) {
		peers++
		if n, _ := p.out.usage(); n == 0 {
			idle = true
		}
	})
	return peers == 0 || idle
}

// flushed reports whether every subscriber has written what it was
// given up to mark.
func (f *fanout) flushed(mark uint64) bool {
	done := true
	f.sock.eachPeer(func(p *peer) {
		if !p.flushed(mark) {
			done = false
		}
	})
	return done
}
