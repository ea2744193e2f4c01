package statsd

import (
	"log/slog"
	"time"
)

// Defaults of Config.
const (
	DefaultPort           = 8125
	DefaultUDPReaders     = 2
	DefaultReadBatch      = 64
	DefaultMaxDatagram    = 8192
	DefaultRecvBuffer     = 4 << 20
	DefaultMaxConns       = 1024
	DefaultMaxLineLength  = 64 << 10
	DefaultBadLineLogGap  = time.Second
	DefaultBackendTimeout = 5 * time.Second
)

// Config configures a Server. Zero fields take the documented defaults.
type Config struct {
	AggregatorConfig

	// UDP, TCP and Unixgram are the addresses to listen on: host:port
	// for UDP and TCP (port 0 picks a free one), a file path for unix
	// datagram sockets. At least one is required.
	UDP, TCP, Unixgram []string
	// UDPReaders is how many sockets read each UDP address; the kernel
	// spreads senders across them. Each socket has a goroutine that only
	// drains it into a queue of up to 4 MiB of datagrams and another that
	// parses and aggregates them, so a flush or a parse in progress does
	// not leave the socket unread. Several share the
	// port with SO_REUSEPORT, which would let another process of the same
	// user join them unnoticed, so the server first checks (in
	// /proc/net/udp) that no other socket receives on the port and
	// refuses to start otherwise (AddrInUseError); one reader sets no
	// SO_REUSEPORT and the kernel itself refuses a second socket. Default 2.
	UDPReaders int
	// ReadBatch is how many datagrams one read takes (recvmmsg).
	// Default 64.
	ReadBatch int
	// MaxDatagram is the longest datagram read whole; of a longer one
	// only the whole lines within it are taken, and it is counted
	// (Truncated). Default 8192, DogStatsD's.
	MaxDatagram int
	// RecvBuffer is the SO_RCVBUF requested for UDP and unix datagram
	// sockets; the kernel may clamp it (net.core.rmem_max), which is
	// logged. -1 requests nothing: the kernel's default
	// (net.core.rmem_default, what Etsy statsd gets). Default 4 MiB.
	RecvBuffer int
	// MaxConns bounds the open TCP connections. At the limit a new
	// connection is accepted and the one idle the longest (that sent
	// nothing for the longest time) is closed, counted
	// (server.conns_evicted) and logged at debug: sockets opened and
	// left idle, however many, lock no client out, and a client that
	// sends keeps its connection. Default 1024.
	MaxConns int
	// IdleTimeout closes a TCP connection that sends nothing for that
	// long, counted (server.conns_idle_closed). Default 0: none, as in
	// Etsy statsd and statsd_exporter (brubeck has no StatsD over TCP):
	// a StatsD client does not read, so the close reaches it only as
	// the loss of its next write, and a quiet client (a cron job's, a
	// counter sent once a minute) would lose data for nothing. Idle
	// sockets are handled at MaxConns instead, and the TCP keepalive
	// the server sets (Go's, 15 s) closes those of vanished hosts.
	IdleTimeout time.Duration
	// MaxLineLength bounds a TCP line; longer lines are discarded and
	// counted. Default 64 KiB.
	MaxLineLength int
	// NoSanitize keeps keys as written (Etsy's keyNameSanitize: false);
	// the Graphite backend then sanitizes names itself, as Etsy's does.
	NoSanitize bool

	// Backends receive every flush, all at once. PacketBackends among
	// them also see every packet.
	Backends []Backend
	// BadLineLogGap is the least time between two logged bad lines
	// (they are all counted), and between two logged read failures of
	// a listener (counted in ListenStats.ReadErrors). Default 1 s.
	BadLineLogGap time.Duration
	// BackendTimeout bounds one backend's flush; under Serve the next
	// flush bounds it too. Default 5 s.
	BackendTimeout time.Duration
	// Logger receives bad lines, clamped buffers and backend failures.
	// Default: discard.
	Logger *slog.Logger
	// Now is the clock, injected for tests. Default time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	c.AggregatorConfig.setDefaults()
	setDefault(&c.UDPReaders, DefaultUDPReaders)
	setDefault(&c.ReadBatch, DefaultReadBatch)
	setDefault(&c.MaxDatagram, DefaultMaxDatagram)
	setDefault(&c.RecvBuffer, DefaultRecvBuffer)
	setDefault(&c.MaxConns, DefaultMaxConns)
	setDefault(&c.MaxLineLength, DefaultMaxLineLength)
	setDefault(&c.BadLineLogGap, DefaultBadLineLogGap)
	setDefault(&c.BackendTimeout, DefaultBackendTimeout)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// maxUnixPath is the longest unix socket path (sun_path less its NUL).
const maxUnixPath = 107

func (c *Config) validate() error {
	if err := c.AggregatorConfig.validate(); err != nil {
		return err
	}
	if len(c.UDP)+len(c.TCP)+len(c.Unixgram) == 0 {
		return badConfig("UDP", "(none)", "at least one address to listen on is required (UDP, TCP or Unixgram)")
	}
	for _, a := range c.UDP {
		if err := checkListenAddr("UDP", "udp", a); err != nil {
			return err
		}
	}
	for _, a := range c.TCP {
		if err := checkListenAddr("TCP", "tcp", a); err != nil {
			return err
		}
	}
	for _, p := range c.Unixgram {
		if p == "" || len(p) > maxUnixPath {
			return badConfig("Unixgram", p, "must be a socket path of 1 to 107 bytes")
		}
	}
	switch {
	case c.UDPReaders < 1 || c.UDPReaders > 64:
		return badConfig("UDPReaders", c.UDPReaders, "must be in [1, 64]")
	case c.ReadBatch < 1 || c.ReadBatch > 1024:
		return badConfig("ReadBatch", c.ReadBatch, "must be in [1, 1024]")
	case c.MaxDatagram < 512 || c.MaxDatagram > 65535:
		return badConfig("MaxDatagram", c.MaxDatagram, "must be in [512, 65535]")
	case c.RecvBuffer < -1:
		return badConfig("RecvBuffer", c.RecvBuffer, "must be -1 (the kernel's default) or a size in bytes")
	case c.MaxConns < 1:
		return badConfig("MaxConns", c.MaxConns, "must be positive")
	case c.IdleTimeout < 0:
		return badConfig("IdleTimeout", c.IdleTimeout, "must not be negative (0: no timeout)")
	case c.MaxLineLength < 64:
		return badConfig("MaxLineLength", c.MaxLineLength, "must be at least 64")
	case c.BadLineLogGap < 0:
		return badConfig("BadLineLogGap", c.BadLineLogGap, "must not be negative")
	case c.BackendTimeout < 0:
		return badConfig("BackendTimeout", c.BackendTimeout, "must not be negative")
	}
	return nil
}
