package logd

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/brokerless/brokerless/logd/auth"
	"github.com/brokerless/brokerless/logd/groups"
	"github.com/brokerless/brokerless/logd/storage"
	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// Defaults of Config.
const (
	DefaultMaxRequestBytes = 100 << 20
	// DefaultMaxUnauthenticatedRequestBytes is Kafka's
	// sasl.server.max.receive.size.
	DefaultMaxUnauthenticatedRequestBytes = 512 << 10
	DefaultPartitions                     = 1
	DefaultMaxConnections                 = 1024
	DefaultFetchMaxWait                   = 500 * time.Millisecond
	DefaultIdleTimeout                    = 10 * time.Minute
	DefaultMaxFetchBytes                  = 50 << 20
	DefaultMaxFetchFiles                  = 256
	// DefaultMaxCopiedFetchBytes is the default of MaxCopiedFetchBytes,
	// raised to twice the larger of MaxFetchBytes and MaxRequestBytes.
	DefaultMaxCopiedFetchBytes = 256 << 20
	DefaultMinSessionTimeout   = 6 * time.Second
	DefaultMaxSessionTimeout   = 30 * time.Minute
	DefaultMaxTopics           = 10000
	// DefaultMaxInFlightRequestBytes is the default of
	// MaxInFlightRequestBytes, raised to twice MaxRequestBytes when that
	// is larger.
	DefaultMaxInFlightRequestBytes = 256 << 20
	DefaultRequestTimeout          = 10 * time.Second
	DefaultWarnLogGap              = 10 * time.Second
)

// Config configures a Server. Zero fields take the documented defaults.
type Config struct {
	// Storage configures the log store; Storage.Dir is required.
	Storage storage.Config
	// AdvertisedHost and AdvertisedPort are what Metadata tells clients
	// to connect to. Default: the listener's address.
	AdvertisedHost string
	AdvertisedPort int32
	// DisableAutoCreateTopics turns off what is on by default, as
	// Kafka's auto.create.topics.enable: an unknown topic is created,
	// with DefaultPartitions, on Metadata (when the client allows it)
	// and on Produce. Off, clients get UNKNOWN_TOPIC_OR_PARTITION.
	DisableAutoCreateTopics bool
	DefaultPartitions       int32
	// MaxTopics bounds the topics CreateTopics and auto-creation may
	// make; beyond it creation is refused (and counted). Default 10000.
	MaxTopics int
	// MaxRequestBytes bounds one request frame; a larger one closes the
	// connection. Default 100 MiB (Kafka's socket.request.max.bytes).
	MaxRequestBytes int
	// MaxUnauthenticatedRequestBytes bounds one request frame from a
	// connection that has not authenticated yet, when Auth requires it
	// (Kafka's sasl.server.max.receive.size): such a connection may only
	// send ApiVersions and the SASL requests, a few hundred bytes each.
	// A larger size header closes the connection before any request
	// memory is taken, and is counted
	// (logd_unauthenticated_oversized_requests_total), so connections
	// that never authenticate cannot hold the request memory that
	// authenticated clients need. Default 512 KiB (Kafka's), or
	// MaxRequestBytes when that is smaller; at least 1024, at most
	// MaxRequestBytes.
	MaxUnauthenticatedRequestBytes int
	// MaxInFlightRequestBytes bounds the memory that the request frames
	// of all connections hold together (Kafka's
	// queued.max.request.bytes). A connection's frame buffer grows as
	// bytes arrive, taking memory from this budget, and gives it back
	// once the request is answered; a connection that cannot get memory
	// waits, until its request deadline (RequestTimeout), then closes.
	// Before a request is decoded, what decoding and answering it may
	// allocate is taken from a second budget of the same size, until its
	// answer is encoded (see decode_charge.go): for a Produce, a Fetch,
	// an OffsetCommit, a JoinGroup, a SyncGroup, a ListOffsets, a
	// CreateTopics or a DescribeGroups, its elements, names and tags; for
	// a Metadata, also the partitions it lists; for any other request, 64
	// times its frame. A JoinGroup waiting for its group gives back its
	// frame and its metadata's charge (its group holds a copy, within
	// MaxGroupBytes). A second budget, so that a complete frame never
	// waits for its charge behind frames still growing, which wait for
	// it: request memory is at most twice this. A request whose charge
	// exceeds the whole budget closes the connection (a FrameError).
	// Default 256 MiB or 2 × MaxRequestBytes, whichever is larger; at
	// least 2 × MaxRequestBytes, so a request of the largest size can
	// always be read.
	MaxInFlightRequestBytes int
	// RequestTimeout bounds the time from the first byte of a request to
	// its last, waits for request memory included, and the time from
	// accepting a connection to the end of its first request; a request
	// not complete by then closes the connection. Default 10 s.
	RequestTimeout time.Duration
	// MaxConnections bounds open client connections; more are refused,
	// and /healthz reports not ready while that happens. Default 1024.
	MaxConnections int
	// MaxConnectionsPerIP bounds the open connections from one client
	// address (Kafka's max.connections.per.ip), so one host cannot take
	// them all. Default a quarter of MaxConnections (256).
	MaxConnectionsPerIP int
	// MaxFetchBytes bounds one Fetch response. Default 50 MiB.
	MaxFetchBytes int
	// MaxGroupBytes bounds the consumer-group metadata held in memory:
	// the JoinGroup protocol metadata and SyncGroup assignments of all
	// members (each up to 1 MiB, kept up to the member's session
	// timeout), their member, instance and client IDs and hosts, and
	// member IDs handed out and not yet used. A join or sync past it is
	// refused with
	// COORDINATOR_NOT_AVAILABLE, which clients retry. At least 1 MiB.
	// Default 64 MiB.
	MaxGroupBytes int
	// MaxFetchFiles bounds the segment file descriptors held by Fetch
	// answers not yet written (each record set sent with sendfile holds
	// one until written, a connection at most 16); past it record sets
	// are copied instead. Default 256.
	MaxFetchFiles int
	// MaxCopiedFetchBytes bounds the record bytes that Fetch answers
	// not yet written hold in memory, over all connections: those read
	// into memory rather than sent from segment files (a TLS connection,
	// or past the descriptors MaxFetchFiles allows), which a client not
	// reading its answers holds for up to IdleTimeout. Once it is used
	// up a Fetch reads less: a partition whose read would pass the bound
	// is answered without records, so a fetch gets at least the first
	// batch when that fits; one left with nothing waits, within its
	// MaxWait, for bytes to come back, and is answered empty at its end
	// (counted in logd_fetch_copied_cut_total). Default 256 MiB or 2 ×
	// the larger of MaxFetchBytes and MaxRequestBytes, whichever is
	// larger; at least that larger one, so the largest batch and the
	// largest answer can be copied.
	MaxCopiedFetchBytes int
	// IdleTimeout closes connections that send nothing between requests
	// for this long. Default 10 min (Kafka's connections.max.idle.ms). A
	// new connection must instead send its first request whole within
	// RequestTimeout. It also caps the waits clients ask for (Kafka
	// does not): a Fetch's MaxWait and an acks=all Produce's timeout,
	// up to 2^31-1 ms in the protocol; a longer one is answered by then,
	// as if it had been that long (an empty fetch, REQUEST_TIMED_OUT).
	IdleTimeout time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound consumer-group
	// session timeouts. Defaults 6 s and 30 min, as Kafka.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// MaxRebalanceTimeout bounds the rebalance timeout a consumer-group
	// member asks for in JoinGroup: a larger one is lowered to it, so one
	// member that never rejoins cannot hold its group in a rebalance for
	// weeks (groups.Config.MaxRebalanceTimeout). At least
	// MinSessionTimeout. Default 5 min.
	MaxRebalanceTimeout time.Duration
	// WarnLogGap: of each kind of connection trouble (bad requests,
	// requests too slow to arrive, refused connections, failed
	// authentications, requests before authentication) at most one
	// WARN line is logged per this gap, saying how many went unlogged
	// since the previous one; /metrics counts them all. Default 10 s.
	WarnLogGap time.Duration
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
	setDefault(&c.MaxUnauthenticatedRequestBytes, min(DefaultMaxUnauthenticatedRequestBytes, c.MaxRequestBytes))
	setDefault(&c.MaxInFlightRequestBytes, max(DefaultMaxInFlightRequestBytes, 2*c.MaxRequestBytes))
	setDefault(&c.RequestTimeout, DefaultRequestTimeout)
	setDefault(&c.WarnLogGap, DefaultWarnLogGap)
	setDefault(&c.MaxTopics, DefaultMaxTopics)
	setDefault(&c.MaxConnections, DefaultMaxConnections)
	setDefault(&c.MaxConnectionsPerIP, max(c.MaxConnections/4, 1))
	setDefault(&c.MaxFetchBytes, DefaultMaxFetchBytes)
	setDefault(&c.MaxFetchFiles, DefaultMaxFetchFiles)
	setDefault(&c.MaxCopiedFetchBytes, max(DefaultMaxCopiedFetchBytes, 2*max(c.MaxFetchBytes, c.MaxRequestBytes)))
	setDefault(&c.MaxGroupBytes, groups.DefaultMaxRetainedBytes)
	// The group coordinator refuses (OFFSET_METADATA_TOO_LARGE) what the
	// store would: one limit for both.
	setDefault(&c.Storage.MaxOffsetMetadata, storage.DefaultMaxOffsetMetadata)
	// /metrics shows the budget of committed offsets.
	setDefault(&c.Storage.MaxOffsetBytes, storage.DefaultMaxOffsetBytes)
	setDefault(&c.IdleTimeout, DefaultIdleTimeout)
	setDefault(&c.MinSessionTimeout, DefaultMinSessionTimeout)
	setDefault(&c.MaxSessionTimeout, DefaultMaxSessionTimeout)
	setDefault(&c.MaxRebalanceTimeout, groups.DefaultMaxRebalanceTimeout)
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
	if c.Storage.FS == nil {
		c.Storage.FS = vfs.OS // the directory lock creates the data directory through it
	}
}

func (c *Config) validate() error {
	bad := func(field string, value any, want string) error {
		return &ConfigError{Field: field, Value: value, Want: want}
	}
	switch {
	case c.Storage.Dir == "":
		return bad("Storage.Dir", `""`, "required")
	case c.DefaultPartitions < 1:
		return bad("DefaultPartitions", c.DefaultPartitions, "must be ≥ 1")
	case c.MaxRequestBytes < 1024:
		return bad("MaxRequestBytes", c.MaxRequestBytes, "must be ≥ 1024")
	case c.MaxUnauthenticatedRequestBytes < 1024 || c.MaxUnauthenticatedRequestBytes > c.MaxRequestBytes:
		return bad("MaxUnauthenticatedRequestBytes", c.MaxUnauthenticatedRequestBytes, fmt.Sprintf("must be in [1024, MaxRequestBytes (%d)]", c.MaxRequestBytes))
	case c.MaxInFlightRequestBytes < 2*c.MaxRequestBytes:
		return bad("MaxInFlightRequestBytes", c.MaxInFlightRequestBytes, fmt.Sprintf("must be ≥ 2 × the largest request (%d)", 2*c.MaxRequestBytes))
	case c.RequestTimeout <= 0:
		return bad("RequestTimeout", c.RequestTimeout, "must be > 0")
	case c.WarnLogGap < 0:
		return bad("WarnLogGap", c.WarnLogGap, "must be > 0")
	case c.MaxTopics < 1:
		return bad("MaxTopics", c.MaxTopics, "must be ≥ 1")
	case c.MaxConnections < 1:
		return bad("MaxConnections", c.MaxConnections, "must be ≥ 1")
	case c.MaxConnectionsPerIP < 1:
		return bad("MaxConnectionsPerIP", c.MaxConnectionsPerIP, "must be ≥ 1")
	case c.MaxFetchBytes < 1:
		return bad("MaxFetchBytes", c.MaxFetchBytes, "must be ≥ 1")
	case c.MaxGroupBytes < groups.DefaultMaxMemberBytes:
		return bad("MaxGroupBytes", c.MaxGroupBytes, fmt.Sprintf("must be ≥ %d", groups.DefaultMaxMemberBytes))
	case c.MaxFetchFiles < 1:
		return bad("MaxFetchFiles", c.MaxFetchFiles, "must be ≥ 1")
	case c.MaxCopiedFetchBytes < max(c.MaxFetchBytes, c.MaxRequestBytes):
		return bad("MaxCopiedFetchBytes", c.MaxCopiedFetchBytes, fmt.Sprintf("must be ≥ the largest fetch answer and request (%d)", max(c.MaxFetchBytes, c.MaxRequestBytes)))
	case c.IdleTimeout <= 0:
		return bad("IdleTimeout", c.IdleTimeout, "must be > 0")
	case c.MinSessionTimeout <= 0:
		return bad("MinSessionTimeout", c.MinSessionTimeout, "must be > 0")
	case c.MaxSessionTimeout < c.MinSessionTimeout:
		return bad("MaxSessionTimeout", c.MaxSessionTimeout, fmt.Sprintf("must be ≥ the minimum session timeout (%v)", c.MinSessionTimeout))
	case c.MaxRebalanceTimeout < c.MinSessionTimeout:
		return bad("MaxRebalanceTimeout", c.MaxRebalanceTimeout, fmt.Sprintf("must be ≥ the minimum session timeout (%v)", c.MinSessionTimeout))
	case c.AdvertisedPort < 0 || c.AdvertisedPort > 65535:
		return bad("AdvertisedPort", c.AdvertisedPort, "must be in [0, 65535]")
	}
	// Checked before New locks (and so creates) the data directory.
	return nestConfigError("Storage.", c.Storage.Validate())
}

func setDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}
