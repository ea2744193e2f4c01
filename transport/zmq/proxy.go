package zmq

import (
	"context"
	"net"
	"sync/atomic"

	"github.com/go-zeromq/zmq4"
)

// ProxyConfig configures a Proxy.
type ProxyConfig struct {
	// XSubBind and XSubConnect are where the publishers are: the proxy's
	// XSUB side binds or connects them. XPubBind and XPubConnect are
	// where the subscribers are: its XPUB side. Each side needs at least
	// one endpoint.
	XSubBind, XSubConnect []string
	XPubBind, XPubConnect []string
	// Config sets the queues, limits and timings of both sides (its
	// Bind, Connect and Subscribe are ignored): SubscriberQueue,
	// SubscriberQueueBytes and Slow apply to each subscriber, as at a
	// publisher.
	Config Config
}

// Proxy is a ZeroMQ forwarder, as an XSUB/XPUB zmq_proxy is: what the
// publishers on its XSUB side send goes to every subscriber on its XPUB
// side that takes the topic, each through its own bounded queue; and
// the subscriptions of its subscribers travel to its publishers — the
// first subscription to a prefix and the last unsubscription, as libzmq's
// XPUB passes them (go-zeromq/zmq4's XPUB swallows them, #108, #136).
// Frames pass through untouched: header frames, and so gap detection,
// travel end to end, and what the proxy drops for a slow subscriber that
// subscriber reports as a gap.
type Proxy struct {
	up   *socket // XSUB: the publishers
	down *socket // XPUB: the subscribers
	in   *inbound
	fan  *fanout

	forwarded, forwardedBytes, subscribed, unsubscribed atomic.Uint64
}

// NewProxy starts a proxy.
func NewProxy(ctx context.Context, cfg ProxyConfig) (*Proxy, error) {
	c := cfg.Config
	c.setDefaults()
	for _, side := range []struct {
		name    string
		bind    []string
		connect []string
	}{{"XSub", cfg.XSubBind, cfg.XSubConnect}, {"XPub", cfg.XPubBind, cfg.XPubConnect}} {
		c.Bind, c.Connect, c.Subscribe = side.bind, side.connect, nil
		if err := c.validate(); err != nil {
			if ce, ok := err.(*ConfigError); ok && (ce.Field == "Bind" || ce.Field == "Connect") {
				ce.Field = side.name + ce.Field
			}
			return nil, err
		}
	}
	p := &Proxy{in: newInbound(nil)}
	p.fan = &fanout{slow: c.Slow, maxSubscriptions: c.MaxSubscriptions, total: map[string]int{}, onSubscribe: p.onSubscribe}
	dc := c.socketConfig()
	dc.typ = zmq4.XPub
	dc.maxMessage, dc.maxWireFrame = fanoutMaxMessage(&c), c.MaxMessageBytes
	dc.role = p.fan
	p.down = newSocket(dc)
	p.fan.sock = p.down

	uc := c.socketConfig()
	uc.typ = zmq4.XSub
	uc.role = p.in
	// Subscriptions only go up: room for every prefix the subscribers
	// may hold, by count and by bytes, else a publisher could never be
	// sent the whole set and would be refused. The set's frames are
	// shared by every publisher's queue (subEntry), so a queue costs an
	// entry per prefix.
	uc.queueItems = c.MaxPeers*c.MaxSubscriptions + 16
	uc.queueBytes = max(c.SubscriberQueueBytes, uc.queueItems*memCost([][]byte{make([]byte, 1+maxPrefix)}))
	p.up = newSocket(uc)
	p.in.sink = p.forward

	if err := p.down.start(cfg.XPubBind, cfg.XPubConnect); err != nil {
		p.Close()
		return nil, err
	}
	if err := p.up.start(cfg.XSubBind, cfg.XSubConnect); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// forward hands a publisher's message to the subscribers.
func (p *Proxy) forward(_ *inConn, frames [][]byte) error {
	size := memCost(frames)
	p.forwarded.Add(1)
	p.forwardedBytes.Add(uint64(size - 64 - 24*len(frames)))
	// A stream's end is not dropped for a full queue, here either.
	end := len(frames) == 2 && isHeader(frames[1]) && kind(frames[1][3]) == kindEnd
	p.fan.offer(zmsg{frames: frames, size: size, msgs: 1, end: end}, frames[0])
	return nil
}

// onSubscribe passes a subscription change to the publishers.
func (p *Proxy) onSubscribe(prefix string, add bool) {
	if add {
		p.subscribed.Add(1)
	} else {
		p.unsubscribed.Add(1)
	}
	p.in.subscribe(prefix, add) // p.in holds any number
}

// XSubAddrs and XPubAddrs are the addresses each side listens on.
func (p *Proxy) XSubAddrs() []net.Addr { return p.up.addrs() }

// XPubAddrs are the addresses the XPUB side listens on.
func (p *Proxy) XPubAddrs() []net.Addr { return p.down.addrs() }

// ProxyStats are a proxy's counters.
type ProxyStats struct {
	// Publishers and Subscribers are connected now.
	Publishers, Subscribers int
	// Forwarded counts ZMTP messages received from publishers, and
	// ForwardedBytes their bytes; Dropped counts copies not queued for a
	// slow subscriber, SlowDisconnects subscribers disconnected for it.
	Forwarded, ForwardedBytes, Dropped, SlowDisconnects uint64
	// Subscribed and Unsubscribed count the subscriptions passed to the
	// publishers; Prefixes is how many are held now.
	Subscribed, Unsubscribed uint64
	Prefixes                 int
	// RefusedSubscriptions counts subscriptions beyond MaxSubscriptions
	// (their subscriber is sent every topic instead).
	RefusedSubscriptions uint64
	// Ignored counts frames a subscriber sent that are neither a
	// subscription nor a cancel (empty, or not beginning with 1 or 0).
	Ignored uint64
	// RefusedPublishers counts publisher connections refused after
	// their handshake (the subscription set did not fit their queue).
	RefusedPublishers uint64
	// FrameTimeouts and TooLarge count connections, of either side,
	// failed with ErrFrameTimeout and ErrFrameTooLarge.
	FrameTimeouts, TooLarge uint64
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() ProxyStats {
	p.in.mu.Lock()
	prefixes := len(p.in.subs)
	p.in.mu.Unlock()
	return ProxyStats{
		Publishers: p.up.numPeers(), Subscribers: p.down.numPeers(),
		Forwarded: p.forwarded.Load(), ForwardedBytes: p.forwardedBytes.Load(),
		Dropped: p.fan.stats.droppedZMTP.Load(), SlowDisconnects: p.fan.stats.slowDisconnects.Load(),
		Subscribed: p.subscribed.Load(), Unsubscribed: p.unsubscribed.Load(), Prefixes: prefixes,
		RefusedSubscriptions: p.fan.stats.refusedSubscriptions.Load(),
		Ignored:              p.fan.stats.ignored.Load(),
		RefusedPublishers:    p.up.stats.attachRefused.Load(),
		FrameTimeouts:        p.up.stats.frameTimeouts.Load() + p.down.stats.frameTimeouts.Load(),
		TooLarge:             p.up.stats.tooLarge.Load() + p.down.stats.tooLarge.Load(),
	}
}

// Close closes both sides and waits for every goroutine.
func (p *Proxy) Close() error {
	p.down.close()
	p.up.close()
	return nil
}
