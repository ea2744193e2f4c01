package statsd

import (
	"fmt"
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
	// UDPReaders is how many sockets and goroutines read each UDP
	// address; the kernel spreads senders across them. Several share the
	// port with SO_REUSEPORT, which would let another process of the same
	// user join them unnoticed, so the server first checks (in
	// /proc/net/udp) that no other socket receives on the port and
	// refuses to start otherwise (AddrInUseError); one reader sets no
	// SO_REUSEPORT and the kernel itself refuses a second socket. Default 2.
	UDPReaders int
	// ReadBatch is how many datagrams one read takes (recvmmsg).
	// Default 64.
	ReadBatch int
	// MaxDatagram is the longest datagram read whole; longer ones are
	// cut and counted (Truncated). Default 8192, DogStatsD's.
	MaxDatagram int
	// RecvBuffer is the SO_RCVBUF requested for UDP sockets; the kernel
	// may clamp it (net.core.rmem_max), which is logged. Default 4 MiB.
	RecvBuffer int
	// MaxConns bounds the open TCP connections; more are closed at once
	// and counted. Default 1024.
	MaxConns int
	// MaxLineLength bounds a TCP line; longer lines are discarded and
	// counted. Default 64 KiB.
	MaxLineLength int
	// NoSanitize keeps keys as written (Etsy's keyNameSanitize: false);
	// the Graphite backend then sanitizes names itself, as Etsy's does.
	NoSanitize bool

	// Backends receive every flush, in order. PacketBackends among them
	// also see every packet.
	Backends []Backend
	// BadLineLogGap is the least time between two logged bad lines
	// (they are all counted). Default 1 s.
	BadLineLogGap time.Duration
	// BackendTimeout bounds one backend's flush. Default 5 s.
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

func (c *Config) validate() error {
	if err := c.AggregatorConfig.validate(); err != nil {
		return err
	}
	switch {
	case len(c.UDP)+len(c.TCP)+len(c.Unixgram) == 0:
		return fmt.Errorf("%w: nothing to listen on", ErrBadConfig)
	case c.UDPReaders < 1 || c.UDPReaders > 64:
		return fmt.Errorf("%w: UDPReaders %d outside [1, 64]", ErrBadConfig, c.UDPReaders)
	case c.ReadBatch < 1 || c.ReadBatch > 1024:
		return fmt.Errorf("%w: ReadBatch %d outside [1, 1024]", ErrBadConfig, c.ReadBatch)
	case c.MaxDatagram < 512 || c.MaxDatagram > 65535:
		return fmt.Errorf("%w: MaxDatagram %d outside [512, 65535]", ErrBadConfig, c.MaxDatagram)
	case c.RecvBuffer < 0 || c.MaxConns < 1 || c.MaxLineLength < 64:
		return fmt.Errorf("%w: RecvBuffer, MaxConns or MaxLineLength out of range", ErrBadConfig)
	case c.BadLineLogGap < 0 || c.BackendTimeout < 0:
		return fmt.Errorf("%w: negative BadLineLogGap or BackendTimeout", ErrBadConfig)
	}
	return nil
}
