package zmq

import (
	"container/list"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/brokerless/brokerless/transport"
)

// semantics is what this transport guarantees: in order per stream,
// never twice, and every message lost between publisher and subscriber
// reported as a gap — but nothing is repaired.
const semantics = transport.Ordered | transport.GapReports | transport.Deduplicated

// Publisher is a ZeroMQ PUB socket that numbers its messages (see the
// package documentation). Each topic is a stream of its own, so a
// subscriber of some topics sees no hole where the others' messages
// were. It implements transport.Publisher and transport.ReceiptPublisher.
type Publisher struct {
	cfg  Config
	sock *socket
	fan  *fanout

	mu           sync.Mutex
	closed       bool
	streams      map[string]*pubStream
	lru          list.List // of *pubStream, most recently used first
	open         *openPack
	ready        []pending
	pendingBytes int
	mark         uint64 // of the last ZMTP message queued

	room       broadcast // pendingBytes went down
	kick       chan struct{}
	stop       chan struct{}
	senderDone chan struct{}
	fanned     atomic.Uint64 // mark of the last message handed to subscribers

	published atomic.Uint64
	heartbeat atomic.Uint64
}

// pubStream is one topic's stream.
type pubStream struct {
	topic   []byte // the topic frame, shared by every message
	session uint64
	next    uint64 // the next sequence number; the first is 1
	active  bool   // published since the last heartbeat tick
	quiet   int    // heartbeat ticks since it last published
	elem    *list.Element
}

// openPack is the pack being filled.
type openPack struct {
	st       *pubStream
	first    uint64
	count    uint64
	base     int64
	body     []byte
	cost     int
	receipts []receiptReq
}

// pending is a ZMTP message queued for the subscribers.
type pending struct {
	m        zmsg
	topic    []byte
	stream   transport.StreamID
	cost     int
	receipts []receiptReq
}

type receiptReq struct {
	seq  uint64
	done func(transport.Receipt, error)
}

// NewPublisher binds and connects the endpoints of cfg and returns a
// publisher. It does not wait for subscribers: what is published while
// none is connected is gone, as with any ZeroMQ PUB (WaitSubscribers
// waits for them).
func NewPublisher(ctx context.Context, cfg Config) (*Publisher, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p := &Publisher{
		cfg:        cfg,
		streams:    map[string]*pubStream{},
		kick:       make(chan struct{}, 1),
		stop:       make(chan struct{}),
		senderDone: make(chan struct{}),
	}
	sc := cfg.socketConfig()
	sc.typ = zmq4.Pub
	sc.maxMessage, sc.maxWireFrame = fanoutMaxMessage(&cfg), cfg.MaxMessageBytes
	p.fan = &fanout{slow: cfg.Slow, maxSubscriptions: cfg.MaxSubscriptions, total: map[string]int{}}
	sc.role = p.fan
	sc.onIdle = p.kickSender
	p.sock = newSocket(sc)
	p.fan.sock = p.sock
	if err := p.sock.start(cfg.Bind, cfg.Connect); err != nil {
		p.sock.close()
		return nil, err
	}
	go p.sendLoop()
	return p, nil
}

// Semantics: ordered, gap reports, deduplicated.
func (p *Publisher) Semantics() transport.Semantics { return semantics }

// Addrs are the addresses the publisher listens on (a bound port 0 is
// the port the system chose).
func (p *Publisher) Addrs() []net.Addr { return p.sock.addrs() }

// Subscribers is the number of subscribers connected.
func (p *Publisher) Subscribers() int { return p.sock.numPeers() }

// WaitSubscribers waits until n subscribers take topic: connected, and
// subscribed to a prefix of it.
func (p *Publisher) WaitSubscribers(ctx context.Context, topic string, n int) error {
	for {
		ch := p.sock.peersChanged.wait()
		got := 0
		p.sock.eachPeer(func(pr *peer) {
			if pr.state.(*subscriber).matches([]byte(topic)) {
				got++
			}
		})
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-p.sock.ctx.Done():
			return transport.ErrClosed
		}
	}
}

// Publish queues m. It blocks, honouring ctx, only while SendQueueBytes
// of messages wait to be handed to the subscribers' queues — never for
// a slow subscriber.
func (p *Publisher) Publish(ctx context.Context, m transport.Message) error {
	return p.publish(ctx, &m, nil)
}

// PublishReceipt is Publish that calls done once m was handed to the
// queue of every subscriber that takes it (or dropped for a slow one):
// the transport's part is then done.
func (p *Publisher) PublishReceipt(ctx context.Context, m transport.Message, done func(transport.Receipt, error)) error {
	return p.publish(ctx, &m, done)
}

func (p *Publisher) publish(ctx context.Context, m *transport.Message, done func(transport.Receipt, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := m.Time
	if t.IsZero() {
		t = time.Now()
	}
	ns := t.UnixNano()
	size := len(m.Topic) + headerFixed + keyHeadersLen(m.Key, m.Headers) + len(m.Payload)
	if size+binaryOverhead > p.cfg.MaxMessageBytes {
		return fmt.Errorf("%w: %d bytes with its topic and header frame, at most %d", transport.ErrTooLarge, size, p.cfg.MaxMessageBytes-binaryOverhead)
	}
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return transport.ErrClosed
		}
		if p.pendingBytes == 0 || p.pendingBytes+size <= p.cfg.SendQueueBytes {
			break
		}
		ch := p.room.wait()
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		p.mu.Lock()
	}
	st := p.stream(m.Topic)
	seq := st.next
	st.next++
	st.active = true
	if limit := p.packLimit(len(m.Topic)); p.cfg.Pack && packEntryLen(m) <= limit {
		p.appendPack(st, seq, ns, m, size, limit, done)
	} else {
		p.closeOpen()
		p.enqueue(p.single(st, seq, ns, m), st, size, receipts(seq, done))
	}
	p.pendingBytes += size
	p.mu.Unlock()
	p.published.Add(1)
	p.kickSender()
	return nil
}

// binaryOverhead is what ZMTP framing adds to a message's three frames,
// at most.
const binaryOverhead = 3 * 9

func receipts(seq uint64, done func(transport.Receipt, error)) []receiptReq {
	if done == nil {
		return nil
	}
	return []receiptReq{{seq, done}}
}

// stream returns the stream of topic, making it (and forgetting the
// least recently used one, beyond MaxTopics) if needed. p.mu is held.
func (p *Publisher) stream(topic string) *pubStream {
	if st, ok := p.streams[topic]; ok {
		p.lru.MoveToFront(st.elem)
		return st
	}
	if len(p.streams) >= p.cfg.MaxTopics {
		old := p.lru.Remove(p.lru.Back()).(*pubStream)
		delete(p.streams, string(old.topic))
		if p.open != nil && p.open.st == old {
			p.closeOpen()
		}
		p.enqueueMark(old, kindEnd)
	}
	st := &pubStream{topic: []byte(topic), session: newSession(), next: 1}
	st.elem = p.lru.PushFront(st)
	p.streams[topic] = st
	return st
}

// newSession draws a stream's session: random, never zero.
func newSession() uint64 {
	for {
		if s := rand.Uint64(); s != 0 {
			return s
		}
	}
}

func (p *Publisher) streamID(st *pubStream) transport.StreamID {
	return transport.StreamID{Feed: p.cfg.Feed, Session: st.session}
}

// single encodes one message as its own ZMTP message.
func (p *Publisher) single(st *pubStream, seq uint64, ns int64, m *transport.Message) zmsg {
	h := header{kind: kindMessage, feed: p.cfg.Feed, session: st.session, seq: seq, time: ns, key: m.Key, headers: m.Headers}
	buf := make([]byte, 0, headerFixed+keyHeadersLen(m.Key, m.Headers)+len(m.Payload))
	buf = appendHeader(buf, &h)
	n := len(buf)
	buf = append(buf, m.Payload...)
	frames := [][]byte{st.topic, buf[:n:n], buf[n:]}
	return zmsg{frames: frames, size: memCost(frames), msgs: 1}
}

// packLimit is the most a pack's body of a topic of topicLen bytes may
// hold: PackBytes, and no more than MaxMessageBytes leaves beside the
// topic and header frames, as a subscriber of the same Config fails a
// connection that brings a larger message.
func (p *Publisher) packLimit(topicLen int) int {
	return min(p.cfg.PackBytes, p.cfg.MaxMessageBytes-binaryOverhead-headerFixed-binary.MaxVarintLen64-topicLen)
}

// appendPack adds a message to the open pack, first closing it if it is
// of another stream or would go beyond limit. p.mu is held.
func (p *Publisher) appendPack(st *pubStream, seq uint64, ns int64, m *transport.Message, size, limit int, done func(transport.Receipt, error)) {
	if o := p.open; o != nil && (o.st != st || len(o.body)+packEntryLen(m) > limit) {
		p.closeOpen()
	}
	if p.open == nil {
		p.open = &openPack{st: st, first: seq, base: ns, body: make([]byte, 0, min(limit, 4*packEntryLen(m)))}
	}
	o := p.open
	o.body = appendPackEntry(o.body, m, ns, o.base)
	o.count++
	o.cost += size
	if done != nil {
		o.receipts = append(o.receipts, receiptReq{seq, done})
	}
}

// closeOpen queues the open pack. p.mu is held.
func (p *Publisher) closeOpen() {
	o := p.open
	if o == nil {
		return
	}
	p.open = nil
	h := header{kind: kindPacked, feed: p.cfg.Feed, session: o.st.session, seq: o.first, time: o.base, count: o.count}
	hdr := appendHeader(make([]byte, 0, headerFixed+10), &h)
	frames := [][]byte{o.st.topic, hdr, o.body}
	m := zmsg{frames: frames, size: memCost(frames), msgs: int(o.count)}
	p.enqueue(m, o.st, o.cost, o.receipts)
}

// enqueue queues m for the sender. p.mu is held.
func (p *Publisher) enqueue(m zmsg, st *pubStream, cost int, rs []receiptReq) {
	p.mark++
	m.mark = p.mark
	p.ready = append(p.ready, pending{m: m, topic: st.topic, stream: p.streamID(st), cost: cost, receipts: rs})
}

// enqueueMark queues a heartbeat or an end of st. p.mu is held.
func (p *Publisher) enqueueMark(st *pubStream, k kind) {
	if p.open != nil && p.open.st == st {
		p.closeOpen()
	}
	h := header{kind: k, feed: p.cfg.Feed, session: st.session, seq: st.next, time: time.Now().UnixNano()}
	hdr := appendHeader(nil, &h)
	frames := [][]byte{st.topic, hdr}
	p.enqueue(zmsg{frames: frames, size: memCost(frames), end: k == kindEnd}, st, 0, nil)
}

func (p *Publisher) kickSender() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// sendLoop hands queued messages to the subscribers' queues. A pack is
// closed, and goes out, when a subscriber's writer is idle: packs grow
// while the network is busy, and a message published while it is not
// goes out at once.
func (p *Publisher) sendLoop() {
	defer close(p.senderDone)
	var tick <-chan time.Time
	if p.cfg.Heartbeat > 0 {
		t := time.NewTicker(p.cfg.Heartbeat)
		defer t.Stop()
		tick = t.C
	}
	var batch []pending
	for {
		select {
		case <-p.kick:
		case <-tick:
			p.heartbeats()
		case <-p.stop:
			return
		}
		p.mu.Lock()
		if p.open != nil && (p.closed || p.fan.anyIdle()) {
			p.closeOpen()
		}
		batch, p.ready = p.ready, batch[:0]
		p.mu.Unlock()
		if len(batch) > 0 {
			p.dispatch(batch)
			clear(batch)
		}
	}
}

// dispatch hands batch to the subscribers' queues, in order.
func (p *Publisher) dispatch(batch []pending) {
	cost := 0
	for i := range batch {
		pd := &batch[i]
		p.fan.offer(pd.m, pd.topic)
		p.fanned.Store(pd.m.mark)
		for _, r := range pd.receipts {
			r.done(transport.Receipt{Stream: pd.stream, Seq: r.seq}, nil)
		}
		cost += pd.cost
	}
	p.mu.Lock()
	p.pendingBytes -= cost
	p.mu.Unlock()
	p.room.notify()
	p.sock.progress.notify()
}

// heartbeats queues a heartbeat for every stream that has been quiet
// for a whole interval: at each of the first three ticks after its last
// message (one may be lost, or dropped for a full queue), then at every
// sixteenth.
func (p *Publisher) heartbeats() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, st := range p.streams {
		if st.active {
			st.active, st.quiet = false, 0
			continue
		}
		st.quiet++
		if st.quiet <= 3 || st.quiet%16 == 0 {
			p.enqueueMark(st, kindHeartbeat)
			p.heartbeat.Add(1)
		}
	}
}

// Flush waits until every message published so far has been written to
// every subscriber that takes it, or dropped for a slow one.
func (p *Publisher) Flush(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return transport.ErrClosed
	}
	p.closeOpen()
	target := p.mark
	p.mu.Unlock()
	p.kickSender()
	return p.waitFlushed(ctx, target)
}

func (p *Publisher) waitFlushed(ctx context.Context, target uint64) error {
	for {
		ch := p.sock.progress.wait()
		if p.fanned.Load() >= target && p.fan.flushed(target) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close ends every stream (subscribers see a StreamEnd), waits up to
// Linger for what is queued to be written, and closes every connection.
func (p *Publisher) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.senderDone
		return nil
	}
	p.closed = true
	p.closeOpen()
	for e := p.lru.Back(); e != nil; e = e.Prev() {
		p.enqueueMark(e.Value.(*pubStream), kindEnd)
	}
	target := p.mark
	p.mu.Unlock()
	p.kickSender()
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Linger)
	p.waitFlushed(ctx, target)
	cancel()
	close(p.stop)
	<-p.senderDone
	p.sock.close()
	p.mu.Lock()
	left := p.ready
	p.ready = nil
	p.mu.Unlock()
	for _, pd := range left {
		for _, r := range pd.receipts {
			r.done(transport.Receipt{Stream: pd.stream, Seq: r.seq}, transport.ErrClosed)
		}
	}
	return nil
}

// PublisherStats are a publisher's counters.
type PublisherStats struct {
	// Published is the number of messages published.
	Published uint64
	// Subscribers is the number connected now.
	Subscribers int
	// Dropped counts messages not queued for a slow subscriber (one per
	// subscriber that missed it), DroppedZMTP the ZMTP messages (packs)
	// they were in, SlowDisconnects the subscribers disconnected for
	// being slow (Config.Slow Disconnect).
	Dropped, DroppedZMTP, SlowDisconnects uint64
	// Discarded counts messages queued for a subscriber and not known
	// to be written (the write that would have taken them failed, or
	// never came) because its connection closed (Slow Disconnect, a failed
	// connection, Close after Linger); DiscardedZMTP the ZMTP messages
	// they were in.
	Discarded, DiscardedZMTP uint64
	// RefusedSubscriptions counts subscriptions beyond
	// MaxSubscriptions, or their bytes: their subscriber is sent every
	// topic instead.
	RefusedSubscriptions uint64
	// Ignored counts frames a subscriber sent that are neither a
	// subscription nor a cancel (empty, or not beginning with 1 or 0).
	Ignored uint64
	// Heartbeats counts heartbeats queued. A heartbeat that finds a
	// subscriber's queue full is dropped (the next one says the same);
	// a stream's end makes room by dropping queued data and heartbeats,
	// counted in Dropped, and DroppedEnds counts ends not queued even
	// so (a queue holding nothing but ends, endReserve beyond its
	// bounds).
	Heartbeats, DroppedEnds uint64
	// Accepted, Refused (beyond MaxPeers, or the oldest in its handshake
	// beyond MaxHandshakes) and HandshakeFailed count
	// incoming connections; Dialed and DialFailed outgoing ones.
	Accepted, Refused, HandshakeFailed, Dialed, DialFailed uint64
	// FrameTimeouts counts connections failed because a frame or
	// message over 64 KiB stalled beyond FrameTimeout (ErrFrameTimeout).
	FrameTimeouts uint64
	// TooLarge counts connections failed because their peer sent a
	// message over MaxMessageBytes, or of too many frames
	// (ErrFrameTooLarge).
	TooLarge uint64
	// HeartbeatTimeouts counts connections closed because the peer sent
	// nothing within PingTimeout of our PING, or within the TTL of its
	// own PING; PongsCoalesced counts PINGs answered by a later PONG
	// (the peer sent them faster than they could be answered).
	HeartbeatTimeouts, PongsCoalesced uint64
}

// Stats returns the publisher's counters.
func (p *Publisher) Stats() PublisherStats {
	f, s := &p.fan.stats, &p.sock.stats
	return PublisherStats{
		Published: p.published.Load(), Subscribers: p.Subscribers(),
		Dropped: f.dropped.Load(), DroppedZMTP: f.droppedZMTP.Load(), SlowDisconnects: f.slowDisconnects.Load(),
		Discarded: s.discarded.Load(), DiscardedZMTP: s.discardedZMTP.Load(),
		RefusedSubscriptions: f.refusedSubscriptions.Load(), Ignored: f.ignored.Load(), Heartbeats: p.heartbeat.Load(), DroppedEnds: f.droppedEnds.Load(),
		Accepted: s.accepted.Load(), Refused: s.refused.Load(), HandshakeFailed: s.handshakeFailed.Load(),
		Dialed: s.dialed.Load(), DialFailed: s.dialFailed.Load(), FrameTimeouts: s.frameTimeouts.Load(), TooLarge: s.tooLarge.Load(),
		HeartbeatTimeouts: s.heartbeatTimeouts.Load(), PongsCoalesced: s.pongsCoalesced.Load(),
	}
}
