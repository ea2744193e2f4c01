package multicast

import (
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"

	"github.com/brokerless/brokerless/reliable"
)

// Defaults of Config.
const (
	DefaultInterface   = "lo"
	DefaultTTL         = 1
	DefaultFeed        = 1
	DefaultSocketBytes = 4 << 20
	DefaultBatch       = 32
	DefaultCloseLinger = time.Second
	DefaultCloseQuiet  = reliable.DefaultRepairTimeout
	DefaultQueue       = 64
	DefaultInlineAfter = 10 * time.Microsecond
)

// maxSpin bounds Config.Spin: longer, a subscriber's core is the
// spinning's, not the feed's.
const maxSpin = time.Second

// maxDatagram is the receive buffer per datagram: the largest IPv4 UDP
// payload, so no publisher MTU is ever truncated.
const maxDatagram = 65507

// Config configures a Publisher or a Subscriber. Zero fields take the
// documented defaults.
type Config struct {
	// Group is the multicast group and port. Required.
	Group netip.AddrPort
	// Interface names the network interface to send and join on.
	// Default "lo", which keeps all traffic on this machine.
	Interface string
	// TTL of multicast datagrams. Default 1: the local network.
	TTL int
	// HostOnly sets the TTL to 0: datagrams never leave this host.
	HostOnly bool
	// NoLoopback stops the publisher's datagrams from being delivered to
	// subscribers on the same host.
	NoLoopback bool
	// Feed names the stream (stable across publisher restarts). Default 1.
	Feed uint32
	// RecvBuffer and SendBuffer are the SO_RCVBUF and SO_SNDBUF sizes
	// requested. The kernel may clamp them (net.core.rmem_max); the
	// clamped value is logged and reported in stats. Default 4 MiB.
	RecvBuffer, SendBuffer int
	// Batch is how many datagrams one system call sends (sendmmsg).
	// Default 32.
	Batch int
	// UnicastRepairs sends repairs only to the subscriber that asked.
	// Without a Key, a subscriber's address is sent at most three times
	// the bytes of its NACKs (which anyone could send with its address),
	// the rest of its repairs going to the group.
	UnicastRepairs bool
	// CloseLinger bounds how long Publisher.Close keeps answering NACKs
	// after the last message, so subscribers can repair a lost tail; it
	// returns earlier once no NACK has come for CloseQuiet, which must
	// exceed the longest wait of a subscriber between two NACKs
	// (reliable.ReceiverConfig.RepairTimeout). Defaults 1 s and 100 ms.
	CloseLinger, CloseQuiet time.Duration
	// InlineAfter: Publish writes its message itself, sparing the
	// hand-off to the send goroutine (lower latency), when no write is in
	// flight and its caller was away this long since its previous
	// Publish returned, or longer than the last such write took (its
	// messages would leave one a datagram anyway); a caller back sooner
	// is in a tight loop (or faster than one datagram per message can
	// follow), and its messages are batched by the send goroutine.
	// Default 10 µs.
	InlineAfter time.Duration
	// FlowFail: with flow control (Sender.Flow), Publish returns an
	// error wrapping reliable.ErrFlowControl at once, instead of
	// waiting, while the receivers it waits for are behind.
	FlowFail bool
	// NoOffload turns off UDP segmentation and receive offload (GSO,
	// GRO), which are otherwise used where the kernel offers them: a
	// publisher then sends, and a subscriber reads, one datagram per
	// batch entry.
	NoOffload bool
	// Queue is how many batches of events a Subscriber buffers for its
	// reader before it stops reading the socket. Default 64.
	Queue int
	// Spin: a Subscriber's Receive (or ReceiveBatch) that finds the
	// socket empty polls it again, without waiting, for up to Spin
	// before it sleeps in the network poller, as Aeron's busy-spin and
	// back-off idle strategies do. A thread woken from sleep takes tens
	// of microseconds on a virtual machine (about 20 µs here), longer
	// than the gap between two messages of a feed at 100,000 msgs/s; a
	// subscriber spinning through those gaps takes each datagram as the
	// kernel queues it, for a core's worth of CPU while its feed is
	// busy. Only the application's goroutine spins, never the reader
	// goroutine that reads while the application is away (nor, with an
	// Archive, at all), and only on Linux, where the socket can be read
	// without waiting (recvmmsg); elsewhere Spin is ignored. At most
	// 1 s. Default 0: no spinning.
	Spin time.Duration
	// Filter, when set, is called once by each NewSubscriber to make the
	// DatagramFilter that the Subscriber's received datagrams pass
	// through before its recovery engine sees them: a way to rehearse
	// loss, duplication, delay and reordering. An error it returns is
	// returned by NewSubscriber. Nil: datagrams go straight to the
	// engine.
	Filter func() (DatagramFilter, error)
	// Key, when set, authenticates every datagram with a tag (see
	// package reliable, "Authentication tag"): publisher and subscribers
	// of a feed share it, and drop and count whatever does not carry a
	// valid tag. At least 16 bytes; ReadKeyFile reads one from a file.
	// It sets Sender.Key and Receiver.Key.
	Key []byte
	// Archive, for a Subscriber, names the log a recorder writes the
	// feed to: what the publisher can no longer give (history for a late
	// joiner, a loss beyond its window, the tail of a session whose
	// publisher crashed) is read from there. See the package
	// documentation, "Archive". Zero: no archive.
	Archive ArchiveConfig
	// Sender and Receiver tune the recovery engine; Feed, Session,
	// Rand and Key are set from this Config.
	Sender   reliable.SenderConfig
	Receiver reliable.ReceiverConfig
	// Logger receives warnings (clamped buffers, socket errors). Default:
	// discard.
	Logger *slog.Logger
	// Now and Rand are injected for tests. Defaults time.Now and a
	// randomly seeded generator.
	Now  func() time.Time
	Rand reliable.Rand

	// awayFor replaces defaultAwayFor (subscriber_read.go) when set: the
	// package's tests lengthen it so that a machine loaded by -race
	// cannot make a paced application look away.
	awayFor time.Duration
}

func (c *Config) setDefaults() {
	if c.Interface == "" {
		c.Interface = DefaultInterface
	}
	switch {
	case c.HostOnly:
		c.TTL = 0
	case c.TTL == 0:
		c.TTL = DefaultTTL
	}
	if c.Feed == 0 {
		c.Feed = DefaultFeed
	}
	setDefault(&c.RecvBuffer, DefaultSocketBytes)
	setDefault(&c.SendBuffer, DefaultSocketBytes)
	setDefault(&c.Batch, DefaultBatch)
	setDefault(&c.CloseLinger, DefaultCloseLinger)
	setDefault(&c.CloseQuiet, DefaultCloseQuiet)
	setDefault(&c.Queue, DefaultQueue)
	setDefault(&c.InlineAfter, DefaultInlineAfter)
	c.Archive.setDefaults()
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
}

func (c *Config) validate() error {
	switch {
	case !c.Group.IsValid() || !c.Group.Addr().Is4() || !c.Group.Addr().IsMulticast():
		return badConfig("Group", c.Group, "must be an IPv4 multicast address and port, e.g. 239.1.2.3:7000")
	case c.Group.Port() == 0:
		return badConfig("Group", c.Group, "needs a port other than 0")
	case c.TTL < 0 || c.TTL > 255:
		return badConfig("TTL", c.TTL, "must be in [0, 255]")
	case c.RecvBuffer < 0:
		return badConfig("RecvBuffer", c.RecvBuffer, "must be ≥ 0")
	case c.SendBuffer < 0:
		return badConfig("SendBuffer", c.SendBuffer, "must be ≥ 0")
	case c.Batch < 1 || c.Batch > 1024:
		return badConfig("Batch", c.Batch, "must be in [1, 1024]")
	case c.CloseLinger < 0:
		return badConfig("CloseLinger", c.CloseLinger, "must be ≥ 0")
	case c.CloseQuiet < 0:
		return badConfig("CloseQuiet", c.CloseQuiet, "must be ≥ 0")
	case c.InlineAfter < 0:
		return badConfig("InlineAfter", c.InlineAfter, "must be ≥ 0")
	case c.Queue < 2:
		return badConfig("Queue", c.Queue, "must be ≥ 2")
	case c.Spin < 0 || c.Spin > maxSpin:
		return badConfig("Spin", c.Spin, "must be in [0, 1s]")
	case c.Archive.enabled() && len(c.Receiver.Feeds) > 0 && !(len(c.Receiver.Feeds) == 1 && c.Receiver.Feeds[0] == c.Feed):
		return badConfig("Receiver.Feeds", c.Receiver.Feeds, "must be empty or Feed alone with an archive: an archive holds one feed")
	}
	return c.Archive.validate()
}

// prepare fills in defaults, validates, and resolves the interface and
// its IPv4 address.
func (c *Config) prepare() (*net.Interface, netip.Addr, error) {
	c.setDefaults()
	if err := c.validate(); err != nil {
		return nil, netip.Addr{}, err
	}
	return iface(c.Interface)
}

func setDefault[T int | time.Duration](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}
