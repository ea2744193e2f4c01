package logd

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/brokerless/brokerless/logd/auth"
	"github.com/brokerless/brokerless/logd/storage"
)

// Defaults of Config.
const (
	DefaultMaxRequestBytes   = 100 << 20
	DefaultPartitions        = 1
	DefaultMaxConnections    = 1024
	DefaultFetchMaxWait      = 500 * time.Millisecond
	DefaultIdleTimeout       = 10 * time.Minute
	DefaultMaxFetchBytes     = 50 << 20
	DefaultMinSessionTimeout = 6 * time.Second
	DefaultMaxSessionTimeout = 30 * time.Minute
	DefaultMaxTopics         = 10000
)

// Config configures a Server. Zero fields take the documented defaults.
type Config struct {
	// Storage configures the log store; Storage.Dir is required.
	Storage storage.Config
	// AdvertisedHost and AdvertisedPort are what Metadata tells clients
	// to connect to. Default: the listener's address.
	AdvertisedHost string
	AdvertisedPort int32
	// AutoCreateTopics creates an unknown topic on Metadata (when the
	// client allows it) and on Produce, with DefaultPartitions.
	AutoCreateTopics  bool
	DefaultPartitions int32
	// MaxTopics bounds the topics CreateTopics and auto-creation may
	// make; beyond it creation is refused (and counted). Default 10000.
	MaxTopics int
	// MaxRequestBytes bounds one request frame; a larger one closes the
	// connection. Default 100 MiB (Kafka's socket.request.max.bytes).
	MaxRequestBytes int
	// MaxConnections bounds open client connections; more are refused.
	// Default 1024.
	MaxConnections int
	// MaxFetchBytes bounds one Fetch response. Default 50 MiB.
	MaxFetchBytes int
	// IdleTimeout closes connections that send nothing for this long.
	// Default 10 min (Kafka's connections.max.idle.ms).
	IdleTimeout time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound consumer-group
	// session timeouts. Defaults 6 s and 30 min, as Kafka.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// Auth, with Auth.Users set, requires authentication and checks
	// every request against the user's grants (package logd/auth).
	// Until a connection authenticates — by SASL (Auth.Mechanisms,
	// default PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512), or by a verified
	// TLS client certificate whose subject common name is a user's name
	// — it is answered nothing but ApiVersions, SaslHandshake and
	// SaslAuthenticate; anything else closes it. TLS belongs to the
	// listener: give Serve a tls.Listener (one that verifies client
	// certificates for certificate principals).
	Auth auth.Config
	// Logger receives connection and request errors. Default: discard.
	Logger *slog.Logger
	// Now is injected for tests. Default time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.DefaultPartitions == 0 {
		c.DefaultPartitions = DefaultPartitions
	}
	setDefault(&c.MaxRequestBytes, DefaultMaxRequestBytes)
	setDefault(&c.MaxTopics, DefaultMaxTopics)
	setDefault(&c.MaxConnections, DefaultMaxConnections)
	setDefault(&c.MaxFetchBytes, DefaultMaxFetchBytes)
	setDefault(&c.IdleTimeout, DefaultIdleTimeout)
	setDefault(&c.MinSessionTimeout, DefaultMinSessionTimeout)
	setDefault(&c.MaxSessionTimeout, DefaultMaxSessionTimeout)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Storage.Logger == nil {
		c.Storage.Logger = c.Logger
	}
	if c.Storage.Now == nil {
		c.Storage.Now = c.Now
	}
}

func (c *Config) validate() error {
	switch {
	case c.Storage.Dir == "":
		return fmt.Errorf("%w: Storage.Dir is required", ErrBadConfig)
	case c.DefaultPartitions < 1:
		return fmt.Errorf("%w: DefaultPartitions %d < 1", ErrBadConfig, c.DefaultPartitions)
	case c.MaxRequestBytes < 1024:
		return fmt.Errorf("%w: MaxRequestBytes %d < 1024", ErrBadConfig, c.MaxRequestBytes)
	case c.MaxTopics < 1:
		return fmt.Errorf("%w: MaxTopics %d < 1", ErrBadConfig, c.MaxTopics)
	case c.MaxConnections < 1:
		return fmt.Errorf("%w: MaxConnections %d < 1", ErrBadConfig, c.MaxConnections)
	case c.MinSessionTimeout <= 0 || c.MaxSessionTimeout < c.MinSessionTimeout:
		return fmt.Errorf("%w: session timeouts %v..%v", ErrBadConfig, c.MinSessionTimeout, c.MaxSessionTimeout)
	case c.AdvertisedPort < 0:
		return fmt.Errorf("%w: AdvertisedPort %d", ErrBadConfig, c.AdvertisedPort)
	}
	return nil
}

func setDefault[T int | time.Duration](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}
