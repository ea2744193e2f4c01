package zmq

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"
)

// SlowPolicy is what a publisher does for a subscriber whose queue is
// full.
type SlowPolicy uint8

const (
	// DropNewest drops what does not fit in the subscriber's queue and
	// counts it; the subscriber reports the hole as a gap (libzmq PUB
	// drops the same way at its SNDHWM, silently).
	DropNewest SlowPolicy = iota
	// Disconnect closes the connection of a subscriber whose queue is
	// full; it reconnects, and reports what it missed as a gap.
	Disconnect
)

func (p SlowPolicy) String() string {
	if p == Disconnect {
		return "disconnect"
	}
	return "drop"
}

// Defaults for the zero values of Config fields. A zero Feed takes
// ProcessFeed.
const (
	DefaultSubscriberQueue      = 1000 // libzmq's default SNDHWM
	DefaultSubscriberQueueBytes = 4 << 20
	DefaultSendQueueBytes       = 4 << 20
	DefaultReceiveQueue         = 1000 // libzmq's default RCVHWM
	DefaultReceiveQueueBytes    = 16 << 20
	DefaultMaxMessageBytes      = 8 << 20
	DefaultMaxPendingBytes      = 64 << 20
	DefaultFrameTimeout         = 10 * time.Second
	DefaultMaxPeers             = 1024
	DefaultMaxHandshakes        = 64
	DefaultMaxSubscriptions     = 1024
	DefaultMaxStreams           = 4096
	DefaultMaxStreamBytes       = 16 << 20
	DefaultMaxTopics            = 1 << 16
	DefaultPackBytes            = 16 << 10
	DefaultHeartbeat            = time.Second
	DefaultReconnect            = 100 * time.Millisecond // libzmq's ZMQ_RECONNECT_IVL
	DefaultReconnectMax         = 5 * time.Second
	DefaultHandshakeTimeout     = 5 * time.Second
	DefaultLinger               = time.Second
)

// Config configures a Publisher or a Subscriber. Zero values take the
// defaults above.
type Config struct {
	// Bind and Connect are ZeroMQ endpoints, tcp://HOST:PORT (HOST "*"
	// for every address) or ipc://PATH. A socket may bind some and
	// connect to others; it needs at least one. A bound port is 0 (any
	// free one) to 65535; a connected endpoint needs a host and a port
	// from 1. Connected endpoints are redialled for as long as the
	// socket is open.
	Bind, Connect []string

	// Feed is a publisher's stable identity (1..2^32-1): a restarted
	// publisher that keeps its feed draws new sessions, and its
	// subscribers see each new stream replace the old one once that one
	// ended or its connection closed. Zero takes ProcessFeed, drawn at
	// random per process: set Feed for restarts to be recognised.
	// Publishers sending the same topic at once, of one feed or several,
	// are separate streams whatever their feeds.
	Feed uint32
	// Pack packs the messages a publisher has queued for one topic into
	// one ZMTP message, up to PackBytes: what it publishes faster than
	// the network takes goes out in packs, what it publishes while idle
	// goes out alone. A pack never goes beyond MaxMessageBytes. Only
	// brokerless subscribers unpack.
	Pack      bool
	PackBytes int
	// SubscriberQueue and SubscriberQueueBytes bound, per subscriber,
	// what a publisher holds for it (messages — a pack counts once — and
	// bytes). Slow says what happens when it is full.
	SubscriberQueue      int
	SubscriberQueueBytes int
	Slow                 SlowPolicy
	// SendQueueBytes bounds what Publish has queued and the publisher
	// not yet handed to its subscribers' queues; Publish blocks beyond.
	SendQueueBytes int
	// MaxTopics bounds the topics a publisher keeps a stream for; the
	// least recently used one is forgotten beyond (publishing on it again
	// starts a new stream).
	MaxTopics int
	// Heartbeat is how often a publisher tells each subscriber the next
	// sequence number of a stream that went quiet, so a lost tail is
	// reported. Negative turns heartbeats off.
	Heartbeat time.Duration
	// Linger is how long Close waits for queued messages to be written.
	Linger time.Duration

	// Credit is how many tasks a Worker holds at once (default 1).
	Credit int

	// Subscribe lists a subscriber's topic prefixes; none subscribes to
	// every topic.
	Subscribe []string
	// ReceiveQueue and ReceiveQueueBytes bound what a subscriber holds
	// that the application has not received (ZMTP messages, bytes);
	// beyond, it stops reading, and the publisher's queue for it fills.
	ReceiveQueue      int
	ReceiveQueueBytes int
	// MaxStreams bounds the streams a subscriber tracks; the least
	// recently seen is forgotten beyond.
	MaxStreams int
	// MaxStreamBytes bounds the memory of the streams a subscriber
	// tracks, topics included (a topic may be long): each costs its
	// topic's length and streamCost bytes; the least recently seen is
	// forgotten beyond.
	MaxStreamBytes int
	// Loss, Duplicate and Reorder drop, duplicate or delay this fraction
	// of received ZMTP messages on purpose, seeded by Seed: a rehearsal
	// of what a subscriber does with gaps (subscriber only).
	Loss, Duplicate, Reorder float64
	Seed                     uint64

	// MaxMessageBytes bounds a ZMTP message a peer may send; a larger
	// one closes the connection. A publisher holds of a subscriber's
	// message no more than 2+MaxSubscriptions*256 bytes: a longer
	// subscription is cut to that, refused (the subscriber is sent
	// every topic), and its cancel cut alike.
	MaxMessageBytes int
	// MaxPendingBytes bounds, across a socket's connections, the bytes of
	// frames over 64 KiB whose header has arrived and whose body has
	// not (memory is allocated for a frame at its header); a frame waits
	// for room before it is read. Default: DefaultMaxPendingBytes, or
	// MaxMessageBytes if larger; it must be at least MaxMessageBytes.
	MaxPendingBytes int
	// FrameTimeout bounds how long the body of a frame over 64 KiB, or
	// the rest of a message once it is over 64 KiB (its frames are held
	// until its last), may take to make 64 KiB of progress, the wait
	// for room in MaxPendingBytes included; the connection fails
	// beyond (ErrFrameTimeout). So a peer must send a large message at
	// 64 KiB a FrameTimeout at least, and a message takes at most
	// (MaxMessageBytes/64 KiB+1)*FrameTimeout. Only the time spent waiting for
	// the network counts, not a pause of the reader while the receive
	// queue is full.
	FrameTimeout time.Duration
	// MaxPeers bounds the connections a bound socket holds past their
	// handshake; one beyond is closed at accept, or once its handshake
	// is done if the last place went during it. A libzmq SUB so
	// refused redials, and once admitted sends its subscriptions again
	// when its application next reads (libzmq resends them from the
	// application's thread).
	MaxPeers int
	// MaxHandshakes bounds the connections a bound socket accepts
	// that are still in their handshake (HandshakeTimeout), apart from
	// MaxPeers: connections that never finish one keep no peer out.
	// Beyond, new connections wait in the listen backlog until one
	// ends its handshake or the oldest has taken HandshakeTimeout/2
	// (at most 1 s), which is then closed to make room (counted in
	// Refused): a flood of them delays a peer, not locks it out, and an
	// honest peer's handshake is not cut (a libzmq SUB sends its
	// subscriptions again on a new connection only when its application
	// next calls into the socket: one not reading yet would be
	// connected and sent nothing until it does).
	MaxHandshakes int
	// MaxSubscriptions bounds the topic prefixes one subscriber may hold
	// at a publisher, and their bytes to MaxSubscriptions*256 (a libzmq
	// subscriber's prefix may be longer than 255 bytes, ours not); a
	// subscriber holds no more (Subscribe refuses them). A peer that
	// subscribes beyond (a libzmq SUB, a proxy) is sent every topic,
	// which its own filter sorts out, instead of being refused, until
	// it has cancelled what was refused (a prefix refused twice is
	// cancelled once, as libzmq's SUB does); refused beyond
	// MaxSubscriptions prefixes more, until it disconnects.
	MaxSubscriptions int
	// Reconnect is the first wait before redialling a connected
	// endpoint; it doubles up to ReconnectMax.
	Reconnect, ReconnectMax time.Duration
	// HandshakeTimeout bounds the ZMTP handshake of a new connection.
	HandshakeTimeout time.Duration
	// PingInterval, PingTimeout and PingTTL are ZMTP 3.1 heartbeats
	// (libzmq's ZMQ_HEARTBEAT_IVL, _TIMEOUT and _TTL): every
	// PingInterval each connection sends a PING asking the peer to
	// close it if the peer hears nothing from us within PingTTL, and
	// closes it if nothing at all arrives within PingTimeout of a PING
	// written (anything counts, not only the PONG; while our reader is
	// held up by a full receive queue, the silence is ours and does
	// not count): a peer that falls silent is closed between
	// PingTimeout and PingInterval + PingTimeout after the last thing it
	// sent. PingInterval 0 sends no PINGs (libzmq's default);
	// PingTimeout 0 is PingInterval; PingTTL 0 asks for none, and is at
	// most 6553.5s. A peer's PINGs are always answered, and the TTL
	// they ask for honoured. PINGs and PONGs bypass the queue bounds.
	PingInterval, PingTimeout, PingTTL time.Duration

	// Logger receives debug logs (default: discarded).
	Logger *slog.Logger
}

// ProcessFeed is the Feed of a publisher whose Config has none: drawn
// at random when the process starts, never zero (feed 0 is a plain
// libzmq publisher's).
var ProcessFeed = func() uint32 {
	for {
		if f := rand.Uint32(); f != 0 {
			return f
		}
	}
}()

func (c *Config) setDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	if c.Feed == 0 {
		c.Feed = ProcessFeed
	}
	def(&c.PackBytes, DefaultPackBytes)
	def(&c.Credit, 1)
	def(&c.SubscriberQueue, DefaultSubscriberQueue)
	def(&c.SubscriberQueueBytes, DefaultSubscriberQueueBytes)
	def(&c.SendQueueBytes, DefaultSendQueueBytes)
	def(&c.MaxTopics, DefaultMaxTopics)
	def(&c.ReceiveQueue, DefaultReceiveQueue)
	def(&c.ReceiveQueueBytes, DefaultReceiveQueueBytes)
	def(&c.MaxStreams, DefaultMaxStreams)
	def(&c.MaxStreamBytes, DefaultMaxStreamBytes)
	def(&c.MaxMessageBytes, DefaultMaxMessageBytes)
	def(&c.MaxPendingBytes, max(DefaultMaxPendingBytes, c.MaxMessageBytes))
	def(&c.MaxPeers, DefaultMaxPeers)
	def(&c.MaxHandshakes, DefaultMaxHandshakes)
	def(&c.MaxSubscriptions, DefaultMaxSubscriptions)
	defDur(&c.Heartbeat, DefaultHeartbeat)
	defDur(&c.Linger, DefaultLinger)
	defDur(&c.Reconnect, DefaultReconnect)
	defDur(&c.ReconnectMax, DefaultReconnectMax)
	defDur(&c.HandshakeTimeout, DefaultHandshakeTimeout)
	defDur(&c.FrameTimeout, DefaultFrameTimeout)
	defDur(&c.PingTimeout, c.PingInterval)
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

func (c *Config) validate() error {
	if len(c.Bind)+len(c.Connect) == 0 {
		return badConfig("Bind", c.Bind, "bind or connect at least one endpoint")
	}
	for _, e := range c.Bind {
		if err := checkEndpoint(e, false); err != nil {
			return badConfig("Bind", e, err.Error())
		}
	}
	for _, e := range c.Connect {
		if err := checkEndpoint(e, true); err != nil {
			return badConfig("Connect", e, err.Error())
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"PackBytes", c.PackBytes}, {"SubscriberQueue", c.SubscriberQueue},
		{"SubscriberQueueBytes", c.SubscriberQueueBytes}, {"SendQueueBytes", c.SendQueueBytes},
		{"MaxTopics", c.MaxTopics}, {"ReceiveQueue", c.ReceiveQueue},
		{"ReceiveQueueBytes", c.ReceiveQueueBytes}, {"MaxStreams", c.MaxStreams}, {"MaxStreamBytes", c.MaxStreamBytes},
		{"MaxMessageBytes", c.MaxMessageBytes}, {"MaxPendingBytes", c.MaxPendingBytes}, {"MaxPeers", c.MaxPeers},
		{"MaxHandshakes", c.MaxHandshakes},
		{"MaxSubscriptions", c.MaxSubscriptions}, {"Credit", c.Credit},
	} {
		if f.v < 0 {
			return badConfig(f.name, f.v, "must be > 0")
		}
	}
	if c.Credit > MaxCredit {
		return badConfig("Credit", c.Credit, fmt.Sprintf("must be at most %d", MaxCredit))
	}
	if c.MaxMessageBytes < headerFixed+64 {
		return badConfig("MaxMessageBytes", c.MaxMessageBytes, "must be at least 96")
	}
	if c.MaxPendingBytes < c.MaxMessageBytes {
		return badConfig("MaxPendingBytes", c.MaxPendingBytes, "must be at least MaxMessageBytes")
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"Linger", c.Linger}, {"Reconnect", c.Reconnect}, {"ReconnectMax", c.ReconnectMax},
		{"HandshakeTimeout", c.HandshakeTimeout}, {"FrameTimeout", c.FrameTimeout},
		{"PingInterval", c.PingInterval}, {"PingTimeout", c.PingTimeout}, {"PingTTL", c.PingTTL},
	} {
		if f.v < 0 {
			return badConfig(f.name, f.v, "must be > 0")
		}
	}
	if c.PingTTL > maxPingTTL {
		return badConfig("PingTTL", c.PingTTL, "must be at most 6553.5s")
	}
	if c.ReconnectMax < c.Reconnect {
		return badConfig("ReconnectMax", c.ReconnectMax, "must be at least Reconnect")
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"Loss", c.Loss}, {"Duplicate", c.Duplicate}, {"Reorder", c.Reorder}} {
		if !(f.v >= 0 && f.v < 1) {
			return badConfig(f.name, f.v, "must be in [0, 1)")
		}
	}
	if c.Slow > Disconnect {
		return badConfig("Slow", c.Slow, "must be DropNewest or Disconnect")
	}
	distinct := map[string]bool{}
	for _, s := range c.Subscribe {
		if len(s) > maxPrefix {
			return badConfig("Subscribe", s, "a prefix is at most 255 bytes")
		}
		distinct[s] = true
	}
	if len(distinct) > c.MaxSubscriptions {
		return badConfig("Subscribe", len(distinct), fmt.Sprintf("at most MaxSubscriptions (%d) distinct prefixes", c.MaxSubscriptions))
	}
	return nil
}

// socketConfig is the part of c a socket of type typ, doing role, needs.
func (c *Config) socketConfig() socketConfig {
	return socketConfig{
		maxMessage:    c.MaxMessageBytes,
		pending:       c.MaxPendingBytes,
		frameTime:     c.FrameTimeout,
		pingInterval:  c.PingInterval,
		pingTimeout:   c.PingTimeout,
		pingTTL:       c.PingTTL,
		queueItems:    c.SubscriberQueue,
		queueBytes:    c.SubscriberQueueBytes,
		maxPeers:      c.MaxPeers,
		maxHandshakes: c.MaxHandshakes,
		handshake:     c.HandshakeTimeout,
		reconnect:     c.Reconnect,
		reconnMax:     c.ReconnectMax,
		log:           c.Logger,
	}
}
