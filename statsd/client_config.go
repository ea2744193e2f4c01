package statsd

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strconv"
	"time"
)

// Defaults of ClientConfig.
const (
	DefaultClientNetwork       = "udp"
	DefaultClientMaxPacketSize = 1432 // a 1500-byte Ethernet MTU less IPv6 and UDP headers, with room for tunnels
	DefaultClientFlushInterval = 100 * time.Millisecond
	DefaultClientQueueBytes    = 256 << 10
	DefaultClientWriteTimeout  = time.Second
	DefaultClientCounterKeys   = 1024
)

// maxClientPacketSize is the largest UDP payload over IPv4.
const maxClientPacketSize = 65507

// minClientPacketSize leaves room for a useful line after the sequence
// line.
const minClientPacketSize = 128

// maxClientShards bounds ClientConfig.Shards.
const maxClientShards = 1024

// maxClientQueueBytes bounds ClientConfig.QueueBytes.
const maxClientQueueBytes = 1 << 30

// maxClientCounterKeys bounds ClientConfig.CounterKeys.
const maxClientCounterKeys = 1 << 20

// ClientConfig configures a Client. Zero fields take the documented
// defaults.
type ClientConfig struct {
	// Addr is the server: host:port for "udp" and "tcp", a socket path for
	// "unixgram". Required.
	Addr string
	// Network is "udp" (default), "udp4", "udp6", "unixgram", "tcp",
	// "tcp4" or "tcp6". On TCP every line ends with a newline.
	Network string
	// Prefix is put before every metric name: "app." gives
	// "app.requests". It counts toward a key's MaxKeyLen (1024 bytes):
	// a metric whose key is longer is dropped and counted (Stats).
	Prefix string
	// Tags are DogStatsD tags ("key:value" or "tag") sent with every
	// metric, before the tags of the call. They count toward a line's
	// MaxTags (64) and its key's MaxKeyLen: a metric with more tags, or
	// a longer key, is dropped and counted. At most 64 that are not
	// empty, and with Prefix they must leave room for a name.
	Tags []string
	// MaxPacketSize bounds a datagram (or one TCP write), sequence line
	// included. Lines are never split: a line longer than a packet is
	// dropped. Default 1432 bytes; at least 128, at most 65507.
	MaxPacketSize int
	// FlushInterval is the longest a line waits in a partly filled
	// packet. Default 100 ms.
	FlushInterval time.Duration
	// QueueBytes bounds the packets filled and waiting for the network.
	// When it is full the lines of a packet that cannot join it are
	// dropped (and counted); callers never wait. Besides the queue, each
	// shard holds the packet it is filling. Default 256 KiB; at least
	// MaxPacketSize, at most 1 GiB.
	QueueBytes int
	// Shards is how many packets are filled at once. A metric name always
	// goes to the same shard, so the lines of one metric keep their
	// order; different names spread over the shards, so concurrent
	// callers seldom share a lock. Default GOMAXPROCS; at most 1024.
	Shards int
	// CounterKeys bounds the counters (name and tags) whose increments
	// are summed in the client between flushes: an increment at rate 1
	// of one of them is an atomic add, and each flush sends one line per
	// counter incremented. A counter not incremented for 10 flushes in a
	// row gives its place up, so names that come and go do not hold the
	// places for good. Increments of counters beyond the bound, and
	// sampled ones, are sent line by line. Default 1024; -1 sends every
	// increment as its own line.
	CounterKeys int
	// WriteTimeout bounds one write (it matters where the network pushes
	// back: unixgram and TCP), a TCP dial, and how long Close keeps
	// writing what is queued. Default 1 s.
	WriteTimeout time.Duration
	// Sequence numbers the packets for loss accounting: each starts with
	// a sequence line (AppendSeqLine), numbered when it is written (a
	// packet the network refused leaves its number to the next), so the
	// brokerless server counts the packets the network lost; stock
	// servers ignore the line. Default off.
	Sequence bool
	// ClientID names this client in its sequence lines: 1 to 64 bytes of
	// [A-Za-z0-9_.-] (CheckClientID). Default: 16 random hex digits, so
	// a restarted client is a new client.
	ClientID string
	// NoSanitize says the server keeps names as written (the brokerless
	// server's Config.NoSanitize, Etsy's keyNameSanitize: false): the
	// client then refuses only an empty name, Prefix included. By
	// default it also refuses a name the server's sanitizing would
	// leave empty ("%%", "é", "温度"; the sanitizing server counts it as
	// a bad line), dropped and counted (Stats).
	NoSanitize bool
	// Logger receives write failures, at most one warning every 10 s.
	// Default: discard.
	Logger *slog.Logger
}

func (c *ClientConfig) setDefaults() {
	if c.Network == "" {
		c.Network = DefaultClientNetwork
	}
	setClientDefault(&c.MaxPacketSize, DefaultClientMaxPacketSize)
	setClientDefault(&c.FlushInterval, DefaultClientFlushInterval)
	setClientDefault(&c.QueueBytes, DefaultClientQueueBytes)
	setClientDefault(&c.Shards, runtime.GOMAXPROCS(0))
	setClientDefault(&c.WriteTimeout, DefaultClientWriteTimeout)
	setClientDefault(&c.CounterKeys, DefaultClientCounterKeys)
	if c.Sequence && c.ClientID == "" {
		c.ClientID = fmt.Sprintf("%016x", rand.Uint64())
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *ClientConfig) validate() error {
	tagBytes, tags := measureTags(c.Tags)
	switch {
	case c.Addr == "":
		return badConfig("Addr", `""`, "is required")
	case clientFramingOf(c.Network) == clientFramingUnknown:
		return badConfig("Network", c.Network, "must be udp, udp4, udp6, unixgram, tcp, tcp4 or tcp6")
	case c.MaxPacketSize < minClientPacketSize || c.MaxPacketSize > maxClientPacketSize:
		return badConfig("MaxPacketSize", c.MaxPacketSize, fmt.Sprintf("must be in [%d, %d]", minClientPacketSize, maxClientPacketSize))
	case c.FlushInterval < 0:
		return badConfig("FlushInterval", c.FlushInterval, "must not be negative")
	case c.WriteTimeout < 0:
		return badConfig("WriteTimeout", c.WriteTimeout, "must not be negative")
	case c.QueueBytes < c.MaxPacketSize || c.QueueBytes > maxClientQueueBytes:
		return badConfig("QueueBytes", c.QueueBytes, fmt.Sprintf("must be in [MaxPacketSize (%d), %d]", c.MaxPacketSize, maxClientQueueBytes))
	case c.Shards < 1 || c.Shards > maxClientShards:
		return badConfig("Shards", c.Shards, fmt.Sprintf("must be in [1, %d]", maxClientShards))
	case c.CounterKeys < -1 || c.CounterKeys > maxClientCounterKeys:
		return badConfig("CounterKeys", c.CounterKeys, fmt.Sprintf("must be in [-1, %d]", maxClientCounterKeys))
	case tags > MaxTags:
		return badConfig("Tags", fmt.Sprintf("%d tags", tags), fmt.Sprintf("must be at most %d (MaxTags)", MaxTags))
	case len(c.Prefix)+tagBytes >= MaxKeyLen:
		return badConfig("Prefix", fmt.Sprintf("%d bytes with Tags", len(c.Prefix)+tagBytes),
			fmt.Sprintf("must leave room for a name in a key of %d bytes (MaxKeyLen)", MaxKeyLen))
	case c.Sequence:
		var idErr *ClientIDError
		if err := CheckClientID(c.ClientID); errors.As(err, &idErr) {
			return badConfig("ClientID", strconv.Quote(c.ClientID), idErr.Reason)
		}
	}
	return nil
}

func setClientDefault[T int | time.Duration](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}

// clientFraming is how lines are delimited on a network.
type clientFraming int

const (
	clientFramingUnknown clientFraming = iota
	clientDatagram                     // lines separated by '\n', one packet per datagram
	clientStream                       // every line ends with '\n'
)

func clientFramingOf(network string) clientFraming {
	switch network {
	case "udp", "udp4", "udp6", "unixgram":
		return clientDatagram
	case "tcp", "tcp4", "tcp6":
		return clientStream
	}
	return clientFramingUnknown
}
