package groups

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Rand is the randomness member IDs are made from. *math/rand/v2.Rand
// satisfies it; tests pass a seeded one so runs repeat exactly. The
// coordinator calls it under its own lock.
type Rand interface {
	Uint64() uint64
}

// Defaults of Config.
const (
	DefaultMinSessionTimeout   = 6 * time.Second  // Kafka's group.min.session.timeout.ms
	DefaultMaxSessionTimeout   = 30 * time.Minute // Kafka's group.max.session.timeout.ms
	DefaultMaxRebalanceTimeout = 5 * time.Minute  // Kafka clients' max.poll.interval.ms default
	DefaultMaxGroups           = 4096
	DefaultMaxMembers          = 1024
	DefaultMaxMemberBytes      = 1 << 20
	DefaultMaxRetainedBytes    = 64 << 20
	DefaultMaxOffsetMetadata   = 4096 // Kafka's offset.metadata.max.bytes
	DefaultTickInterval        = 100 * time.Millisecond
)

// Config configures a Coordinator. Zero fields take the documented
// defaults.
type Config struct {
	// Offsets stores committed offsets. Required.
	Offsets OffsetStore
	// PartitionExists says whether a topic partition exists; commits to
	// others are refused with UNKNOWN_TOPIC_OR_PARTITION. Default: every
	// partition ≥ 0 of every topic exists.
	PartitionExists func(topic string, partition int32) bool
	// MinSessionTimeout and MaxSessionTimeout bound the session timeout
	// a member may ask for (INVALID_SESSION_TIMEOUT outside). Defaults
	// 6 s and 30 min, as Kafka's.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// MaxRebalanceTimeout bounds the rebalance timeout a member asks for
	// in JoinGroup: a larger one is lowered to it (not refused: Kafka
	// Streams asks for up to 2^31-1 ms), so one member that never rejoins
	// cannot hold the group in a rebalance for weeks. Kafka's broker
	// does not bound it; 5 min is its clients' max.poll.interval.ms
	// default. At least MinSessionTimeout. Default 5 min.
	MaxRebalanceTimeout time.Duration
	// InitialRebalanceDelay holds the first rebalance of an Empty group
	// open this long (extended by the same again for each member that
	// joins meanwhile, up to the rebalance timeout), so members starting
	// together form one generation instead of several. Default 0: the
	// first member gets a generation at once. Kafka's default is 3 s;
	// a single node with few consumers favours a fast start.
	InitialRebalanceDelay time.Duration
	// MaxGroups bounds the groups held in memory. Default 4096.
	MaxGroups int
	// MaxMembers bounds the members of one group, counting member IDs
	// handed out with MEMBER_ID_REQUIRED and not yet used. Default 1024.
	MaxMembers int
	// MaxMemberBytes bounds one member's protocol names and metadata in
	// JoinGroup, and each assignment in SyncGroup. Default 1 MiB.
	MaxMemberBytes int
	// MaxRetainedBytes bounds the names and protocol types of the
	// groups held in memory (Empty ones too), the protocol names and
	// metadata, the assignments, and the member, instance and client IDs
	// and client hosts of all their members, and the member IDs handed
	// out with MEMBER_ID_REQUIRED (each kept up to a session timeout),
	// and each group's chosen protocol name; a JoinGroup or SyncGroup
	// that would hold more first evicts Empty groups (the longest Empty
	// first) if that makes room, and is otherwise refused with
	// COORDINATOR_NOT_AVAILABLE, which clients retry. A protocol chosen
	// as a rebalance ends is counted without being refused, and may take
	// the count past the bound by up to one name per group (see
	// setProtocol); joins and syncs that add bytes are refused until it
	// is back under. At least MaxMemberBytes. Default 64 MiB.
	MaxRetainedBytes int
	// MaxOffsetMetadata bounds the metadata string of one committed
	// offset, in bytes: a longer one is refused with
	// OFFSET_METADATA_TOO_LARGE. Default 4096, as Kafka's
	// offset.metadata.max.bytes.
	MaxOffsetMetadata int
	// TickInterval is how often Run calls Tick. Default 100 ms.
	TickInterval time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Rand makes member IDs. Default: a randomly seeded generator.
	Rand Rand
	// Logger receives group transitions (Info), refusals (Warn) and
	// store failures (Error). Default: discard.
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	setDefault(&c.MinSessionTimeout, DefaultMinSessionTimeout)
	setDefault(&c.MaxSessionTimeout, DefaultMaxSessionTimeout)
	setDefault(&c.MaxRebalanceTimeout, DefaultMaxRebalanceTimeout)
	setDefault(&c.MaxGroups, DefaultMaxGroups)
	setDefault(&c.MaxMembers, DefaultMaxMembers)
	setDefault(&c.MaxMemberBytes, DefaultMaxMemberBytes)
	setDefault(&c.MaxRetainedBytes, max(DefaultMaxRetainedBytes, c.MaxMemberBytes))
	setDefault(&c.MaxOffsetMetadata, DefaultMaxOffsetMetadata)
	setDefault(&c.TickInterval, DefaultTickInterval)
	if c.PartitionExists == nil {
		c.PartitionExists = func(string, int32) bool { return true }
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *Config) validate() error {
	switch {
	case c.Offsets == nil:
		return fmt.Errorf("%w: Offsets is required", ErrBadConfig)
	case c.MinSessionTimeout < 0 || c.MaxSessionTimeout < c.MinSessionTimeout:
		return fmt.Errorf("%w: session timeouts [%v, %v] are not a range", ErrBadConfig, c.MinSessionTimeout, c.MaxSessionTimeout)
	case c.MaxRebalanceTimeout < c.MinSessionTimeout:
		return fmt.Errorf("%w: MaxRebalanceTimeout %v < MinSessionTimeout %v", ErrBadConfig, c.MaxRebalanceTimeout, c.MinSessionTimeout)
	case c.InitialRebalanceDelay < 0:
		return fmt.Errorf("%w: negative InitialRebalanceDelay", ErrBadConfig)
	case c.MaxGroups < 1 || c.MaxMembers < 1:
		return fmt.Errorf("%w: MaxGroups %d and MaxMembers %d must be ≥ 1", ErrBadConfig, c.MaxGroups, c.MaxMembers)
	case c.MaxMemberBytes < 1 || c.MaxOffsetMetadata < 0:
		return fmt.Errorf("%w: MaxMemberBytes %d < 1 or negative MaxOffsetMetadata", ErrBadConfig, c.MaxMemberBytes)
	case c.MaxRetainedBytes < c.MaxMemberBytes:
		return fmt.Errorf("%w: MaxRetainedBytes %d < MaxMemberBytes %d", ErrBadConfig, c.MaxRetainedBytes, c.MaxMemberBytes)
	case c.TickInterval < 0:
		return fmt.Errorf("%w: negative TickInterval", ErrBadConfig)
	}
	return nil
}

func setDefault[T int | time.Duration](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}
