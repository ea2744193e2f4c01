package storage

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/brokerless/brokerless/logd/internal/offbudget"
	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// FsyncPolicy says when appended bytes are forced to disk.
type FsyncPolicy int

const (
	// FsyncAlways (the default): WaitDurable returns only once the bytes
	// of the offset it names are fsynced. Appends that arrive while an
	// fsync runs share the next one (group commit). Readers see a batch
	// only once it is durable: the high watermark is the durable offset,
	// so a consumer never sees a record that a crash could take back.
	FsyncAlways FsyncPolicy = iota
	// FsyncInterval fsyncs every Config.FsyncInterval. WaitDurable
	// returns at once and readers see batches as soon as they are
	// appended: a power loss loses what was acknowledged (and perhaps
	// consumed) since the last completed fsync — about one interval,
	// more when an fsync takes longer than the interval. A crash of the
	// process alone loses nothing.
	FsyncInterval
	// FsyncNever leaves flushing to the operating system. WaitDurable
	// returns at once. Only a segment's roll (and Close, and Open, which
	// fsyncs what it recovered) fsyncs, so a power loss or kernel crash
	// can lose every record appended to the active segment since it
	// was started: up to SegmentBytes of acknowledged data, never a
	// record of a sealed segment. A crash of the process alone loses
	// nothing.
	FsyncNever
)

func (p FsyncPolicy) String() string {
	switch p {
	case FsyncAlways:
		return "always"
	case FsyncInterval:
		return "interval"
	case FsyncNever:
		return "never"
	}
	return "unknown"
}

// ParseFsyncPolicy parses "always", "interval" or "never".
func ParseFsyncPolicy(s string) (FsyncPolicy, error) {
	for _, p := range []FsyncPolicy{FsyncAlways, FsyncInterval, FsyncNever} {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, &ConfigError{"Fsync", s, "always, interval or never"}
}

// CleanupPolicy is Kafka's cleanup.policy: what happens to old data.
type CleanupPolicy int

const (
	// CleanupInherit, in a TopicConfig, takes the Store's policy.
	CleanupInherit CleanupPolicy = iota
	// CleanupDelete deletes whole segments past RetentionAge or
	// RetentionBytes (Kafka's "delete", the default).
	CleanupDelete
	// CleanupCompact keeps the latest record per key (Kafka's "compact").
	// Retention does not apply.
	CleanupCompact
	// CleanupCompactDelete does both (Kafka's "compact,delete").
	CleanupCompactDelete
)

func (p CleanupPolicy) String() string {
	switch p {
	case CleanupInherit:
		return ""
	case CleanupDelete:
		return "delete"
	case CleanupCompact:
		return "compact"
	case CleanupCompactDelete:
		return "compact,delete"
	}
	return "unknown"
}

func (p CleanupPolicy) compacts() bool { return p == CleanupCompact || p == CleanupCompactDelete }
func (p CleanupPolicy) deletes() bool  { return p == CleanupDelete || p == CleanupCompactDelete }

// ParseCleanupPolicy parses Kafka's cleanup.policy values: "delete",
// "compact", "compact,delete" or "delete,compact".
func ParseCleanupPolicy(s string) (CleanupPolicy, error) {
	if s == "delete,compact" {
		return CleanupCompactDelete, nil
	}
	for _, p := range []CleanupPolicy{CleanupDelete, CleanupCompact, CleanupCompactDelete} {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, &ConfigError{"Cleanup", s, "delete, compact or compact,delete"}
}

// Defaults of Config. The Kafka topic setting each one mirrors is named.
const (
	DefaultSegmentBytes        = 128 << 20          // segment.bytes is 1 GiB in Kafka; smaller segments make retention finer
	DefaultSegmentAge          = 7 * 24 * time.Hour // segment.ms
	DefaultIndexIntervalBytes  = 4096               // index.interval.bytes
	DefaultRetentionBytes      = -1                 // retention.bytes: none
	DefaultRetentionAge        = 7 * 24 * time.Hour // retention.ms
	DefaultDeleteRetention     = 24 * time.Hour     // delete.retention.ms
	DefaultMaxBatchBytes       = 1048588            // message.max.bytes (1 MiB + the 12-byte log overhead)
	DefaultFsyncInterval       = time.Second
	DefaultMaxProducers        = 4096             // per partition
	DefaultProducerExpiry      = 24 * time.Hour   // producer.id.expiration.ms
	DefaultMaintenanceInterval = 15 * time.Second // log.cleaner.backoff.ms
	DefaultCompactMaxKeys      = 1 << 20          // ~ log.cleaner.dedupe.buffer.size / 24 bytes
	DefaultMaxPartitions       = 1024             // per topic
	DefaultMaxGroups           = 1 << 16
	DefaultMaxOffsetMetadata   = 4096                 // offset.metadata.max.bytes
	DefaultMaxOffsetBytes      = offbudget.DefaultMax // Kafka sets no bound
	DefaultOffsetsRetention    = 7 * 24 * time.Hour   // offsets.retention.minutes
)

// Limits of the settings that are not configurable themselves.
const (
	// MinSegmentBytes and MaxSegmentBytes bound SegmentBytes; the
	// maximum keeps file positions in the 32-bit index entries.
	MinSegmentBytes = 1 << 10
	MaxSegmentBytes = 1 << 30
	// MinBatchBytes and MaxBatchBytes bound MaxBatchBytes: a batch
	// header, and 64 MiB.
	MinBatchBytes = batchHeaderLen
	MaxBatchBytes = 64 << 20
)

// Config configures a Store. Zero fields take the documented defaults;
// the settings from SegmentBytes to MaxBatchBytes are the defaults of
// every topic, which a TopicConfig can override.
type Config struct {
	// Dir holds everything the Store writes. Required; created if
	// missing.
	Dir string
	// SegmentBytes: a segment rolls when the next batch would take it
	// past this size. Default 128 MiB; at most 1 GiB.
	SegmentBytes int64
	// SegmentAge: a segment rolls (at the next append) once it was
	// started this long ago by Now, so time retention can delete it; a
	// segment reopened after a restart counts from its first batch's
	// timestamp. Default 7 days; -1 never.
	SegmentAge time.Duration
	// IndexIntervalBytes: the offset index gets an entry every this many
	// bytes of batches. Default 4096.
	IndexIntervalBytes int
	// RetentionBytes: the oldest segments are deleted while the
	// partition is larger than this. Default -1: no size limit.
	RetentionBytes int64
	// RetentionAge: a segment is deleted once its newest timestamp is
	// older than this. Default 7 days; -1: no age limit.
	RetentionAge time.Duration
	// Cleanup is the cleanup policy. Default CleanupDelete.
	Cleanup CleanupPolicy
	// DeleteRetention: compaction keeps a tombstone (a record with a null
	// value) until its timestamp is this old, so consumers catching up
	// see the delete. Default 24 h.
	DeleteRetention time.Duration
	// MaxBatchBytes bounds one appended batch, header included. Default
	// 1048588 (Kafka's message.max.bytes); at most 64 MiB.
	MaxBatchBytes int

	// Fsync is the durability policy. Default FsyncAlways.
	Fsync FsyncPolicy
	// FsyncInterval is the period of FsyncInterval. Default 1 s.
	FsyncInterval time.Duration
	// MaxProducers bounds the idempotent producers remembered per
	// partition; beyond it the one idle longest is forgotten (and
	// counted). Default 4096.
	MaxProducers int
	// ProducerExpiry: a producer that has not appended for this long is
	// forgotten; its retries are then treated as new batches. Default
	// 24 h.
	ProducerExpiry time.Duration
	// MaintenanceInterval is how often a background goroutine applies
	// retention and compaction to every partition, unfences the fenced
	// ones and expires consumer groups' offsets (Store.Maintain). It also compacts a compacted topic's
	// partition as soon as a segment of it is sealed. Default 15 s (as
	// often as Kafka's log cleaner looks for work); -1: never, and no
	// compaction on sealing either (call Store.Maintain).
	MaintenanceInterval time.Duration
	// CompactMaxKeys bounds the keys one compaction pass maps (about 50
	// bytes each): mapping walks back from the newest sealed segment and
	// stops after the segment that reaches it. Default 1 Mi.
	CompactMaxKeys int
	// MaxPartitions bounds the partitions of one topic. Default 1024.
	MaxPartitions int
	// MaxGroups bounds the consumer groups with committed offsets. A
	// new group's commit beyond it first expires the groups past
	// OffsetsRetention, and is refused (ErrTooManyGroups) if none is.
	// Default 65536.
	MaxGroups int
	// OffsetsRetention: a consumer group's committed offsets are deleted
	// once it has gone this long without a commit and without members
	// (Kafka's offsets.retention.minutes, with KIP-211's rule: for a
	// consumer group the time runs from when it last had members; for a
	// standalone consumer, from its last commit). A group with members
	// keeps its offsets. Expiry runs at each maintenance pass, and when
	// a new group would exceed MaxGroups. See OffsetStore.Expire.
	// Default 7 days, as Kafka's; -1: never (MaxGroups then fills for
	// good).
	OffsetsRetention time.Duration
	// MaxOffsetMetadata bounds the metadata of one committed offset.
	// Default 4096 (Kafka's offset.metadata.max.bytes). logd's group
	// coordinator takes the same limit: an OffsetCommit partition over
	// it is answered OFFSET_METADATA_TOO_LARGE and not committed.
	MaxOffsetMetadata int
	// MaxOffsetBytes bounds the bytes the committed offsets of all
	// groups hold, in memory and so in the offsets log and its replay
	// (OffsetStore.Bytes): each committed partition counts as its topic
	// and metadata plus 128 bytes, each group as its name plus 256. A
	// commit that would take them past it first expires the groups past
	// OffsetsRetention, and is refused (ErrOffsetsFull) if that does not
	// make room; a commit that adds nothing (the same partitions, no
	// longer metadata) is accepted even over it, so a store that holds
	// more, the budget lowered since, still serves. Default 64 MiB:
	// Kafka clients commit empty metadata unless told otherwise, so that
	// is some 400 000 committed partitions (a thousand groups of 400),
	// far more than a single node serves, while MaxGroups groups each
	// committing thousands of partitions with 4 KiB of metadata could
	// otherwise hold gigabytes. At least 1.
	MaxOffsetBytes int64

	// FS is the file layer. Default vfs.OS; tests put a disk that fails
	// or loses power under the Store (vfs.Faults, vfs.Lazy).
	FS vfs.FS

	// Now is the clock: segment age, retention, tombstone age, producer
	// expiry, the time of offset commits. Default time.Now.
	Now func() time.Time
	// Logger receives recovery reports, truncations and I/O errors.
	// Default: discard.
	Logger *slog.Logger
	// Hooks receive metrics events; each implements one or more of the
	// Hook interfaces.
	Hooks []Hook
}

func (c *Config) setDefaults() {
	setDefault(&c.SegmentBytes, DefaultSegmentBytes)
	setDefault(&c.SegmentAge, DefaultSegmentAge)
	setDefault(&c.IndexIntervalBytes, DefaultIndexIntervalBytes)
	setDefault(&c.RetentionBytes, DefaultRetentionBytes)
	setDefault(&c.RetentionAge, DefaultRetentionAge)
	setDefault(&c.Cleanup, CleanupDelete)
	setDefault(&c.DeleteRetention, DefaultDeleteRetention)
	setDefault(&c.MaxBatchBytes, DefaultMaxBatchBytes)
	setDefault(&c.FsyncInterval, DefaultFsyncInterval)
	setDefault(&c.MaxProducers, DefaultMaxProducers)
	setDefault(&c.ProducerExpiry, DefaultProducerExpiry)
	setDefault(&c.MaintenanceInterval, DefaultMaintenanceInterval)
	setDefault(&c.CompactMaxKeys, DefaultCompactMaxKeys)
	setDefault(&c.MaxPartitions, DefaultMaxPartitions)
	setDefault(&c.MaxGroups, DefaultMaxGroups)
	setDefault(&c.MaxOffsetMetadata, DefaultMaxOffsetMetadata)
	setDefault(&c.MaxOffsetBytes, DefaultMaxOffsetBytes)
	setDefault(&c.OffsetsRetention, DefaultOffsetsRetention)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.FS == nil {
		c.FS = vfs.OS
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports the first field of c, with its documented defaults
// applied, that Open would refuse (a *ConfigError). It touches nothing,
// so a caller can check a configuration before it takes any resource.
func (c Config) Validate() error {
	c.setDefaults()
	return c.validate()
}

func (c *Config) validate() error {
	switch {
	case c.Dir == "":
		return &ConfigError{"Dir", c.Dir, "a directory is required"}
	case c.Fsync < FsyncAlways || c.Fsync > FsyncNever:
		return &ConfigError{"Fsync", c.Fsync, "always, interval or never"}
	case c.FsyncInterval <= 0:
		return &ConfigError{"FsyncInterval", c.FsyncInterval, "must be > 0"}
	case c.MaxProducers < 1:
		return &ConfigError{"MaxProducers", c.MaxProducers, "must be >= 1"}
	case c.ProducerExpiry <= 0:
		return &ConfigError{"ProducerExpiry", c.ProducerExpiry, "must be > 0"}
	case c.MaintenanceInterval <= 0 && c.MaintenanceInterval != -1:
		return &ConfigError{"MaintenanceInterval", c.MaintenanceInterval, "must be > 0, or -1 for never"}
	case c.CompactMaxKeys < 1:
		return &ConfigError{"CompactMaxKeys", c.CompactMaxKeys, "must be >= 1"}
	case c.MaxPartitions < 1:
		return &ConfigError{"MaxPartitions", c.MaxPartitions, "must be >= 1"}
	case c.MaxGroups < 1:
		return &ConfigError{"MaxGroups", c.MaxGroups, "must be >= 1"}
	case c.MaxOffsetMetadata < 0 || c.MaxOffsetMetadata > 1<<16-1:
		return &ConfigError{"MaxOffsetMetadata", c.MaxOffsetMetadata, "must be in [0, 65535]"}
	case c.MaxOffsetBytes < 1:
		return &ConfigError{"MaxOffsetBytes", c.MaxOffsetBytes, "must be >= 1"}
	case c.OffsetsRetention < time.Millisecond && c.OffsetsRetention != -1:
		return &ConfigError{"OffsetsRetention", c.OffsetsRetention, "must be ≥ 1ms, or -1 for never"}
	}
	return c.topicDefaults().validate()
}

// topicDefaults is the TopicConfig every topic starts from.
func (c *Config) topicDefaults() TopicConfig {
	return TopicConfig{
		SegmentBytes:       c.SegmentBytes,
		SegmentAge:         c.SegmentAge,
		IndexIntervalBytes: c.IndexIntervalBytes,
		RetentionBytes:     c.RetentionBytes,
		RetentionAge:       c.RetentionAge,
		Cleanup:            c.Cleanup,
		DeleteRetention:    c.DeleteRetention,
		MaxBatchBytes:      c.MaxBatchBytes,
	}
}

// TopicConfig holds a topic's overrides of the Store's defaults. A zero
// field inherits the Store's value; the meaning of each field is that of
// the Config field of the same name. Overrides are persisted with the
// topic.
type TopicConfig struct {
	// Kafka holds topic settings the Store keeps with the topic without
	// applying them (Kafka config name → value as given), so a Kafka
	// admin tool reads back what it set. Never inherited.
	Kafka map[string]string `json:"kafka,omitempty"`

	SegmentBytes       int64         `json:"segment_bytes,omitempty"`
	SegmentAge         time.Duration `json:"segment_age,omitempty"`
	IndexIntervalBytes int           `json:"index_interval_bytes,omitempty"`
	RetentionBytes     int64         `json:"retention_bytes,omitempty"`
	RetentionAge       time.Duration `json:"retention_age,omitempty"`
	Cleanup            CleanupPolicy `json:"cleanup,omitempty"`
	DeleteRetention    time.Duration `json:"delete_retention,omitempty"`
	MaxBatchBytes      int           `json:"max_batch_bytes,omitempty"`
}

// over returns base with the non-zero fields of t applied.
func (t TopicConfig) over(base TopicConfig) TopicConfig {
	setDefault(&t.SegmentBytes, base.SegmentBytes)
	setDefault(&t.SegmentAge, base.SegmentAge)
	setDefault(&t.IndexIntervalBytes, base.IndexIntervalBytes)
	setDefault(&t.RetentionBytes, base.RetentionBytes)
	setDefault(&t.RetentionAge, base.RetentionAge)
	setDefault(&t.Cleanup, base.Cleanup)
	setDefault(&t.DeleteRetention, base.DeleteRetention)
	setDefault(&t.MaxBatchBytes, base.MaxBatchBytes)
	return t
}

// validate checks an effective (fully defaulted) topic configuration.
func (t TopicConfig) validate() error {
	switch {
	case t.SegmentBytes < MinSegmentBytes || t.SegmentBytes > MaxSegmentBytes:
		return &ConfigError{"SegmentBytes", t.SegmentBytes, fmt.Sprintf("must be in [%d, %d]", MinSegmentBytes, MaxSegmentBytes)}
	case t.SegmentAge <= 0 && t.SegmentAge != -1:
		return &ConfigError{"SegmentAge", t.SegmentAge, "must be > 0, or -1 for never"}
	case t.IndexIntervalBytes < 1:
		return &ConfigError{"IndexIntervalBytes", t.IndexIntervalBytes, "must be >= 1"}
	case t.RetentionBytes < -1:
		return &ConfigError{"RetentionBytes", t.RetentionBytes, "must be >= 0, or -1 for no limit"}
	case t.RetentionAge <= 0 && t.RetentionAge != -1:
		return &ConfigError{"RetentionAge", t.RetentionAge, "must be > 0, or -1 for never"}
	case t.Cleanup < CleanupDelete || t.Cleanup > CleanupCompactDelete:
		return &ConfigError{"Cleanup", t.Cleanup, "delete, compact or compact,delete"}
	case t.DeleteRetention < 0:
		return &ConfigError{"DeleteRetention", t.DeleteRetention, "must be >= 0"}
	case t.MaxBatchBytes < MinBatchBytes || t.MaxBatchBytes > MaxBatchBytes:
		return &ConfigError{"MaxBatchBytes", t.MaxBatchBytes, fmt.Sprintf("must be in [%d, %d]", MinBatchBytes, MaxBatchBytes)}
	}
	return nil
}

func setDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}
