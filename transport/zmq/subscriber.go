package zmq

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/brokerless/brokerless/transport"
)

// Subscriber is a ZeroMQ SUB socket that puts what it receives back in
// order per stream and reports what is missing as gaps (see the package
// documentation). It implements transport.Subscriber.
type Subscriber struct {
	cfg  Config
	sock *socket
	in   *inbound
	q    *inq
	// filter is the subscriber's own subscriptions: what a publisher
	// sends outside them is not delivered (libzmq's SUB filters too).
	filter *prefixFilter

	closeOnce sync.Once
	closed    chan struct{}

	// Receive's state: one goroutine at a time.
	rmu      sync.Mutex
	tr       *tracker
	evs      []transport.Event
	next     int
	cur      inItem // the ZMTP message being delivered
	pack     packReader
	packID   transport.StreamID
	packSeq  uint64
	packLast uint64
	topic    string
	hs       []transport.Header
	faults   *faults

	received, badHeaders, badPacks, plain, filtered atomic.Uint64
}

// NewSubscriber binds and connects the endpoints of cfg and subscribes
// to cfg.Subscribe. It does not wait for publishers: connected
// endpoints are dialled, and redialled, in the background.
func NewSubscriber(ctx context.Context, cfg Config) (*Subscriber, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Subscriber{
		cfg:    cfg,
		q:      newInq(cfg.ReceiveQueue, cfg.ReceiveQueueBytes),
		closed: make(chan struct{}),
		tr:     newTracker(cfg.MaxStreams, cfg.MaxStreamBytes),
	}
	if cfg.Loss+cfg.Duplicate+cfg.Reorder > 0 {
		s.faults = &faults{rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), loss: cfg.Loss, dup: cfg.Duplicate, reorder: cfg.Reorder}
	}
	subs := cfg.Subscribe
	if len(subs) == 0 {
		subs = []string{""}
	}
	s.filter = newPrefixFilter(subs)
	s.in = newInbound(subs)
	s.in.maxSubs = cfg.MaxSubscriptions
	s.in.sink = s.sink
	s.in.ended = s.q.putEnded
	sc := cfg.socketConfig()
	sc.typ = zmq4.Sub
	sc.role = s.in
	sc.queueItems = 2*cfg.MaxSubscriptions + 16
	s.sock = newSocket(sc)
	if err := s.sock.start(cfg.Bind, cfg.Connect); err != nil {
		s.sock.close()
		return nil, err
	}
	return s, nil
}

// sink queues a message a publisher sent; the connection's reader waits
// while the queue is full.
func (s *Subscriber) sink(c *inConn, frames [][]byte) error {
	if !s.q.put(inItem{frames: frames, size: memCost(frames), conn: c}, c.closed) {
		return errClosedSocket
	}
	c.queued = true
	return nil
}

// Semantics: ordered, gap reports, deduplicated.
func (s *Subscriber) Semantics() transport.Semantics { return semantics }

// Addrs are the addresses the subscriber listens on.
func (s *Subscriber) Addrs() []net.Addr { return s.sock.addrs() }

// Publishers is the number of publishers connected.
func (s *Subscriber) Publishers() int { return s.sock.numPeers() }

// WaitPublishers waits until n publishers are connected; after Close it
// returns transport.ErrClosed.
func (s *Subscriber) WaitPublishers(ctx context.Context, n int) error {
	return s.sock.waitPeers(ctx, n)
}

// Subscribe adds a topic prefix, and tells every publisher. A subscriber
// holds at most MaxSubscriptions distinct prefixes, the most a
// publisher takes from one subscriber.
func (s *Subscriber) Subscribe(prefix string) error {
	if len(prefix) > maxPrefix {
		return badConfig("Subscribe", prefix, "a prefix is at most 255 bytes")
	}
	// The filter first: a publisher told sends at once.
	s.filter.change(prefix, true)
	if err := s.in.subscribe(prefix, true); err != nil {
		s.filter.change(prefix, false)
		return err
	}
	return nil
}

// Unsubscribe removes a topic prefix Subscribe added (once per
// Subscribe), and tells every publisher.
func (s *Subscriber) Unsubscribe(prefix string) {
	s.in.subscribe(prefix, false) // never refuses a removal
	s.filter.change(prefix, false)
}

// Receive returns the next event. Slices in it stay valid until the
// next call.
func (s *Subscriber) Receive(ctx context.Context) (transport.Event, error) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	for {
		if err := ctx.Err(); err != nil {
			return transport.Event{}, err
		}
		if s.next < len(s.evs) {
			ev := s.evs[s.next]
			s.next++
			return ev, nil
		}
		s.evs, s.next = s.evs[:0], 0
		if s.pack.left > 0 {
			if ev, ok := s.nextPacked(); ok {
				return ev, nil
			}
			continue
		}
		select {
		case <-s.closed:
			return transport.Event{}, transport.ErrClosed
		default:
		}
		it, err := s.get(ctx)
		if errors.Is(err, errClosedSocket) {
			return transport.Event{}, transport.ErrClosed
		}
		if err != nil {
			return transport.Event{}, err
		}
		s.cur = it
		if ev, ok := s.decode(it); ok {
			return ev, nil
		}
	}
}

// get takes the next ZMTP message, through the rehearsal faults if any.
func (s *Subscriber) get(ctx context.Context) (inItem, error) {
	for {
		if s.faults != nil {
			if it, ok := s.faults.held(); ok {
				return it, nil
			}
		}
		it, err := s.q.get(ctx, s.closed)
		if err != nil || s.faults == nil || it.ended {
			return it, err
		}
		if it, ok := s.faults.apply(it); ok {
			return it, nil
		}
	}
}

// decode turns a ZMTP message into events, queued in s.evs; it returns
// the first at once when it is a single message.
func (s *Subscriber) decode(it inItem) (transport.Event, bool) {
	if it.ended {
		s.evs = s.tr.disconnected(it.conn.id, s.evs)
		return transport.Event{}, false
	}
	s.received.Add(1)
	f := it.frames
	plain := len(f) < 2 || !isHeader(f[1])
	var h header
	if !plain {
		var err error
		h, err = parseHeader(f[1], s.hs)
		if err != nil || h.kind != kindHeartbeat && h.kind != kindEnd && len(f) != 3 || (h.kind == kindHeartbeat || h.kind == kindEnd) && len(f) != 2 {
			if !it.conn.plain {
				s.badHeaders.Add(1)
				return transport.Event{}, false
			}
			// A plain publisher's frame that begins as a header
			// frame does: its message, numbered on arrival, would
			// be lost without a gap.
			plain = true
		}
	}
	if plain {
		it.conn.plain = true
		if !s.filter.match(f[0]) {
			s.filtered.Add(1) // not numbered: no gap for it
			return transport.Event{}, false
		}
		return s.plainMessage(it)
	}
	id := transport.StreamID{Feed: h.feed, Session: h.session}
	topic := f[0]
	if !s.filter.match(topic) {
		// Not subscribed (any more): what it numbers was not this
		// subscriber's to get, so it is not a gap if the stream is
		// subscribed again.
		last := h.seq
		switch h.kind {
		case kindPacked:
			if checkPack(f[2], h.count) != nil {
				s.badPacks.Add(1) // its count cannot move the stream
				return transport.Event{}, false
			}
			last = h.seq + h.count - 1
		case kindHeartbeat, kindEnd:
			last = h.seq - 1
		}
		s.filtered.Add(1)
		s.tr.skip(id, last)
		return transport.Event{}, false
	}
	switch h.kind {
	case kindHeartbeat, kindEnd:
		s.evs = s.tr.mark(id, topic, it.conn.id, h.seq, h.kind == kindEnd, s.evs)
		return transport.Event{}, false
	case kindMessage:
		s.hs = h.headers
		from, ok, evs := s.tr.data(id, topic, it.conn.id, h.seq, h.seq, s.evs)
		s.evs = evs
		if !ok || from != h.seq {
			return transport.Event{}, false
		}
		ev := transport.Event{Kind: transport.EventMessage, Message: transport.Message{
			Stream: id, Seq: h.seq, Time: time.Unix(0, h.time), Topic: s.topicString(topic),
			Key: h.key, Headers: h.headers, Payload: f[2]}}
		if len(s.evs) > 0 {
			s.evs = append(s.evs, ev)
			return transport.Event{}, false
		}
		return ev, true
	}
	if err := checkPack(f[2], h.count); err != nil {
		// Dropped whole before its stream sees it: what it held is
		// reported lost when the stream's next message or heartbeat
		// comes, and a lie in its header cannot move the stream.
		s.badPacks.Add(1)
		return transport.Event{}, false
	}
	last := h.seq + h.count - 1
	from, ok, evs := s.tr.data(id, topic, it.conn.id, h.seq, last, s.evs)
	s.evs = evs
	if !ok {
		return transport.Event{}, false
	}
	s.pack = packReader{body: f[2], base: h.time, left: h.count}
	s.packID, s.packSeq, s.packLast, s.topic = id, h.seq, last, s.topicString(topic)
	for s.packSeq < from {
		if _, ok := s.nextPacked(); !ok {
			break
		}
	}
	return transport.Event{}, false
}

// topicString returns topic as a string, reusing the last one.
func (s *Subscriber) topicString(topic []byte) string {
	if string(topic) != s.topic {
		s.topic = string(topic)
	}
	return s.topic
}

// nextPacked returns the next message of the current pack. A pack that
// cannot be read any further reports the rest as a gap.
func (s *Subscriber) nextPacked() (transport.Event, bool) {
	e, err := s.pack.next(s.hs)
	if err != nil {
		s.badPacks.Add(1)
		s.pack.left = 0
		s.evs = append(s.evs, s.tr.lost(s.packID, s.packSeq, s.packLast))
		return transport.Event{}, false
	}
	s.hs = e.headers
	seq := s.packSeq
	s.packSeq++
	return transport.Event{Kind: transport.EventMessage, Message: transport.Message{
		Stream: s.packID, Seq: seq, Time: time.Unix(0, e.time), Topic: s.topic,
		Key: e.key, Headers: e.headers, Payload: e.payload}}, true
}

// plainMessage delivers a message of a publisher that sends no header
// frame (a plain libzmq PUB): numbered here, per connection, as it
// arrives, under Feed 0 and a session drawn for the connection. One
// frame is the payload; with more, the first is the topic and the last
// the payload, and those between are headers named "zmq.frame".
func (s *Subscriber) plainMessage(it inItem) (transport.Event, bool) {
	s.plain.Add(1)
	c := it.conn
	c.n++
	f := it.frames
	m := transport.Message{Stream: transport.StreamID{Session: c.session}, Seq: c.n, Time: time.Now()}
	m.Payload = f[len(f)-1]
	if len(f) > 1 {
		m.Topic = s.topicString(f[0])
	}
	s.hs = s.hs[:0]
	for _, mid := range f[min(1, len(f)-1) : len(f)-1] {
		s.hs = append(s.hs, transport.Header{Key: "zmq.frame", Value: mid})
	}
	if len(s.hs) > 0 {
		m.Headers = s.hs
	}
	from, ok, evs := s.tr.data(m.Stream, f[0][:len(m.Topic)], it.conn.id, m.Seq, m.Seq, s.evs)
	s.evs = evs
	if !ok || from != m.Seq {
		return transport.Event{}, false
	}
	ev := transport.Event{Kind: transport.EventMessage, Message: m}
	if len(s.evs) > 0 {
		s.evs = append(s.evs, ev)
		return transport.Event{}, false
	}
	return ev, true
}

// Close unblocks Receive and closes every connection.
func (s *Subscriber) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	s.sock.close()
	return nil
}

// SubscriberStats are a subscriber's counters.
type SubscriberStats struct {
	// Received counts ZMTP messages received (a pack once); Plain those
	// of publishers without header frames.
	Received, Plain uint64
	// Filtered counts ZMTP messages dropped because their topic (first
	// frame) matches none of the subscriber's subscriptions, as libzmq's
	// SUB drops them; they are not reported as gaps.
	Filtered uint64
	// BadHeaders counts messages dropped for a header frame that could
	// not be read (a sequence number 0 among them); BadPacks packs
	// dropped whole because their body does not hold the count of
	// messages their header says. Neither touches its stream: what they
	// held is reported lost when the stream's next message comes.
	BadHeaders, BadPacks uint64
	// Duplicates counts messages received again, Late those of streams
	// already ended or replaced, Evicted streams forgotten beyond
	// MaxStreams or MaxStreamBytes.
	Duplicates, Late, Evicted uint64
	// Publishers is the number connected now; Dialed, DialFailed,
	// Accepted, Refused and HandshakeFailed count connections.
	Publishers                                       int
	Dialed, DialFailed, Accepted, Refused, Handshake uint64
	// FrameTimeouts counts connections failed because a frame or
	// message over 64 KiB stalled beyond FrameTimeout (ErrFrameTimeout).
	FrameTimeouts uint64
	// TooLarge counts connections failed because their publisher sent
	// a message over MaxMessageBytes, or of too many frames
	// (ErrFrameTooLarge): what it sent after is lost with the
	// connection, reported as a gap only if it numbers its messages.
	TooLarge uint64
	// RefusedPublishers counts publisher connections refused after
	// their handshake (the subscription set did not fit their queue).
	RefusedPublishers uint64
	// HeartbeatTimeouts counts connections closed because the peer sent
	// nothing within PingTimeout of our PING, or within the TTL of its
	// own PING; PongsCoalesced counts PINGs answered by a later PONG
	// (the peer sent them faster than they could be answered).
	HeartbeatTimeouts, PongsCoalesced uint64
}

// Stats returns the subscriber's counters. Duplicates, Late and Evicted
// are as of the last Receive.
func (s *Subscriber) Stats() SubscriberStats {
	s.rmu.Lock()
	d, l, e := s.tr.duplicates, s.tr.late, s.tr.evicted
	s.rmu.Unlock()
	k := &s.sock.stats
	return SubscriberStats{
		Received: s.received.Load(), Plain: s.plain.Load(), Filtered: s.filtered.Load(), BadHeaders: s.badHeaders.Load(), BadPacks: s.badPacks.Load(),
		Duplicates: d, Late: l, Evicted: e, Publishers: s.Publishers(),
		Dialed: k.dialed.Load(), DialFailed: k.dialFailed.Load(), Accepted: k.accepted.Load(), Refused: k.refused.Load(),
		Handshake: k.handshakeFailed.Load(), FrameTimeouts: k.frameTimeouts.Load(), TooLarge: k.tooLarge.Load(), RefusedPublishers: k.attachRefused.Load(),
		HeartbeatTimeouts: k.heartbeatTimeouts.Load(), PongsCoalesced: k.pongsCoalesced.Load(),
	}
}
