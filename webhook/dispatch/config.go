package dispatch

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/brokerless/brokerless/webhook"
	"github.com/brokerless/brokerless/webhook/store"
)

// Defaults of Config.
const (
	DefaultTimeout     = 15 * time.Second
	DefaultConcurrency = 4
	DefaultQueueDepth  = 256
	DefaultMaxInFlight = 1024
	// DefaultMaxInFlightBytes bounds the payloads held (64 MiB).
	DefaultMaxInFlightBytes = 64 << 20
	DefaultBatchSize        = 100
	DefaultPollInterval     = time.Second
	DefaultMaxResponseBody  = 4 << 10
	// DefaultRetention is how long events are kept, as Svix keeps
	// message payloads.
	DefaultRetention = 90 * 24 * time.Hour
	// leaseMargin is the part of a lease kept for recording an attempt
	// after its response: an attempt starts only while at least Timeout +
	// leaseMargin of its lease remain.
	leaseMargin = 5 * time.Second
)

// ErrBadConfig wraps every ConfigError.
var ErrBadConfig = errors.New("dispatch: bad config")

// ConfigError is a Config field whose value is outside what it allows.
type ConfigError struct {
	Field string
	Value any
	Want  string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("dispatch: bad config: %s %v: %s", e.Field, e.Value, e.Want)
}

func (e *ConfigError) Unwrap() error { return ErrBadConfig }

// Setting returns the field, its value and what it allows.
func (e *ConfigError) Setting() (string, any, string) { return e.Field, e.Value, e.Want }

// Config configures a Dispatcher. Zero fields take the defaults shown.
type Config struct {
	// Store holds the outbox (required).
	Store store.Store
	// Addresses is the SSRF policy of the default Client.
	Addresses webhook.AddressPolicy
	// Client makes the attempts; nil means Addresses.Client(Timeout),
	// which checks every address at connect time, never follows a
	// redirect and reads at most webhook.MaxResponseHeaderBytes of
	// response headers. A Client given here should do the same.
	Client *http.Client
	// Timeout bounds one attempt, response body included (15 s), with
	// the given Client too (the request's context ends then).
	Timeout time.Duration
	// Policy decides retries and disabling; zero fields take
	// DefaultSchedule, DefaultJitter, DefaultDisableAfter and
	// DefaultMaxRetryAfter. A negative DisableAfter never disables.
	Policy Policy
	// Lease is how long a claimed delivery stays with this dispatcher
	// before another may claim it (2×Timeout + 10 s). An attempt starts
	// only while Timeout + 5 s of its lease remain; a delivery that waited
	// longer in its endpoint's queue is released for the next claim.
	// On SQLite leases are measured by Now: this dispatcher's claims
	// never start a second attempt of a delivery it is attempting,
	// whatever its clock does. On PostgreSQL, which several dispatchers
	// share, they are measured by the database server's clock, so
	// dispatchers whose clocks disagree never attempt one delivery at
	// once either (their clocks, Now, still decide when a delivery is
	// due).
	Lease time.Duration
	// Concurrency is the most attempts in flight to one endpoint (4).
	Concurrency int
	// QueueDepth is how many more deliveries of one endpoint are claimed
	// ahead, waiting for a free slot (256): claims come in batches rather
	// than one per attempt, and an endpoint is refilled once half its
	// queue is gone. An endpoint whose attempts are slow gets a shorter
	// queue: what its workers get through in half of Lease − Timeout − 5 s
	// at the pace of its recent attempts; one with a rate limit gets
	// none (its slots are taken as its attempts start). (16 made claims a third of the
	// store's work in BenchmarkThroughput; with 64 a PostgreSQL claim,
	// whose commit waits for its log to be flushed, came every 32
	// deliveries and the workers waited for it.)
	QueueDepth int
	// MaxInFlight is the most deliveries claimed and not yet finished, in
	// all (1024).
	MaxInFlight int
	// MaxInFlightBytes bounds the payloads of the deliveries claimed and
	// not yet finished, in all (64 MiB): no more are taken once those
	// held hold this much (the one that reaches it is taken, so a payload
	// larger than it is still attempted). A claim asks for no more than
	// the room left at the size of the payloads seen; a delivery beyond
	// it is released for a later claim.
	MaxInFlightBytes int
	// BatchSize is the most deliveries one claim takes (100).
	BatchSize int
	// PollInterval is the longest the dispatcher sleeps before looking
	// for due deliveries again when nothing wakes it (1 s); other
	// dispatchers' work and rate limits are noticed this way.
	PollInterval time.Duration
	// MaxResponseBody is how much of a response body an attempt keeps (4 KiB).
	MaxResponseBody int
	// Retention is how long events are kept (90 days): older ones are
	// deleted, with their deliveries and attempts, when Run starts and
	// every hour after, but for those with a delivery still pending.
	// Negative keeps every event.
	Retention time.Duration
	// NoticeEndpoint, when set, is the endpoint operational events
	// (endpoint.disabled, message.attempt.exhausted) are delivered to.
	NoticeEndpoint string
	// Owner names this dispatcher in leases (random by default).
	Owner string
	// Now is the clock (time.Now).
	Now func() time.Time
	// Rand returns uniform numbers in [0, 1) for the jitter (crypto/rand).
	Rand func() float64
	// Logger gets warnings (discarded by default).
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Policy.Schedule == nil {
		c.Policy.Schedule = DefaultSchedule
	}
	if c.Policy.Jitter == 0 {
		c.Policy.Jitter = DefaultJitter
	}
	switch {
	case c.Policy.DisableAfter == 0:
		c.Policy.DisableAfter = DefaultDisableAfter
	case c.Policy.DisableAfter < 0:
		c.Policy.DisableAfter = 0
	}
	if c.Policy.MaxRetryAfter == 0 {
		c.Policy.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if c.Lease == 0 {
		c.Lease = 2*c.Timeout + 2*leaseMargin
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.QueueDepth == 0 {
		c.QueueDepth = DefaultQueueDepth
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.MaxInFlightBytes == 0 {
		c.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.MaxResponseBody == 0 {
		c.MaxResponseBody = DefaultMaxResponseBody
	}
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.Client == nil {
		c.Client = c.Addresses.Client(c.Timeout)
	}
	if c.Owner == "" {
		c.Owner = store.NewID("dispatcher", time.Now())
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = cryptoFloat
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *Config) validate() error {
	switch {
	case c.Store == nil:
		return &ConfigError{"Store", nil, "required"}
	case c.Timeout < 0:
		return &ConfigError{"Timeout", c.Timeout, "must be > 0"}
	case len(c.Policy.Schedule) == 0:
		return &ConfigError{"Policy.Schedule", c.Policy.Schedule, "at least one attempt"}
	case c.Policy.Jitter < 0 || c.Policy.Jitter >= 1:
		return &ConfigError{"Policy.Jitter", c.Policy.Jitter, "must be in [0, 1)"}
	case c.Policy.MaxRetryAfter < 0:
		return &ConfigError{"Policy.MaxRetryAfter", c.Policy.MaxRetryAfter, "must be > 0"}
	case c.Lease <= c.Timeout+leaseMargin:
		return &ConfigError{"Lease", c.Lease, fmt.Sprintf("must exceed the timeout + %v (%v)", leaseMargin, c.Timeout+leaseMargin)}
	case c.Concurrency < 0:
		return &ConfigError{"Concurrency", c.Concurrency, "must be > 0"}
	case c.QueueDepth < 0:
		return &ConfigError{"QueueDepth", c.QueueDepth, "must be >= 0"}
	case c.MaxInFlight < c.Concurrency+c.QueueDepth:
		return &ConfigError{"MaxInFlight", c.MaxInFlight, fmt.Sprintf("must be at least Concurrency + QueueDepth (%d)", c.Concurrency+c.QueueDepth)}
	case c.MaxInFlightBytes < 0:
		return &ConfigError{"MaxInFlightBytes", c.MaxInFlightBytes, "must be > 0"}
	case c.BatchSize < 0:
		return &ConfigError{"BatchSize", c.BatchSize, "must be > 0"}
	case c.PollInterval < 0:
		return &ConfigError{"PollInterval", c.PollInterval, "must be > 0"}
	case c.MaxResponseBody < 0:
		return &ConfigError{"MaxResponseBody", c.MaxResponseBody, "must be > 0"}
	}
	for i, d := range c.Policy.Schedule {
		if d < 0 {
			return &ConfigError{fmt.Sprintf("Policy.Schedule[%d]", i), d, "must be >= 0"}
		}
	}
	return nil
}

// cryptoFloat is a uniform float64 in [0, 1) from crypto/rand.
func cryptoFloat() float64 {
	var b [8]byte
	_, _ = io.ReadFull(rand.Reader, b[:])
	return float64(binary.BigEndian.Uint64(b[:])>>11) / (1 << 53)
}
