package kafka

import (
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// closeFlush bounds how long Close waits for buffered records or
// offset commits.
const closeFlush = 5 * time.Second

// DefaultMaxBuffered is Config.MaxBuffered's default: librdkafka's
// queue.buffering.max.messages.
const DefaultMaxBuffered = 100_000

// Config configures a Publisher, a Subscriber or a GroupSubscriber.
type Config struct {
	// Brokers are the seed brokers, HOST:PORT (port 1..65535). Required.
	Brokers []string
	// Topic is the topic published to and consumed. Required: a name
	// Kafka accepts, 1 to 249 of a-z A-Z 0-9 . _ -.
	Topic string
	// From is where a Subscriber starts, and where a GroupSubscriber
	// starts a partition its group has committed no offset for (a
	// committed offset wins). An offset past a partition's end starts
	// at the end, for both. Default Earliest.
	From Position
	// Partitions, when not empty, restricts a Subscriber to these
	// partitions; a Publisher given exactly one publishes to it. Default:
	// every partition (a Publisher spreads records by key hash). Not
	// allowed with Group: the group assigns partitions.
	Partitions []int32
	// Group makes a GroupSubscriber a member of this consumer group.
	// Required by NewGroupSubscriber, refused by NewSubscriber.
	Group string
	// Instance makes a GroupSubscriber a static member of its group
	// under this name (Kafka's group.instance.id, KIP-345): a member that
	// restarts with the same name takes its old place and partitions at
	// once, where a dynamic member's restart waits for the dead session
	// to time out; closing does not leave the group. Each member needs
	// its own name: a second one with the same name fences the first.
	Instance string
	// SessionTimeout is how long a group member may go without a
	// heartbeat before the group drops it (kgo's default, 45 s, when 0;
	// the broker bounds it, logd to [6 s, 30 min]).
	SessionTimeout time.Duration
	// RebalanceTimeout is how long a rebalance waits for the members to
	// join again before it drops those that did not (kgo's default, 60 s,
	// when 0). A dynamic member's restart waits for the lesser of the two
	// timeouts; a static member's does not wait.
	RebalanceTimeout time.Duration
	// Linger is how long a Publisher's client holds a partition's
	// records to fill a batch before it sends them. Default 0: records
	// go at once, and what arrives while requests are in flight is
	// batched into the next (kgo's own default, 10 ms, would add up to
	// 10 ms to every message of a paced feed).
	Linger time.Duration
	// Compression is the codec a Publisher compresses its record
	// batches with: "none", "gzip", "snappy", "lz4" or "zstd" (Kafka's
	// compression.type). Default "snappy", kgo's own default. Every
	// Kafka client, logd and our subscribers read all five. Data that
	// does not compress (random or already compressed values) costs the
	// client CPU for nothing with a codec; "none" spares it.
	Compression string
	// MaxBuffered is how many records a Publisher holds, sent or not,
	// before a Publish waits for the broker to acknowledge some.
	// Default DefaultMaxBuffered, librdkafka's default; kgo's own,
	// 10,000, is 8 ms of a 1.2 M msgs/s feed, so that a recorder of a
	// multicast feed whose logd pauses for longer (an fsync, a
	// segment roll) stops reading the feed and may fall behind the
	// publisher's window. What it costs is memory: at most this many
	// records' bytes.
	MaxBuffered int
	// LeaderAcks has produces answered once the broker has written them,
	// not once they are durable (acks=all, the default). It turns the
	// idempotent producer off: a retry can then store a record twice.
	LeaderAcks bool
	// LogFetchBytes bounds what one read of a Log (OpenLog) brings, and
	// what it fetches ahead: at most this many bytes of records a fetch,
	// but always a whole first record batch, up to 64 MiB.
	// Default DefaultLogFetchBytes; kgo's own default, 50 MiB, would be
	// the most a replay of an archive holds per read. A batch a Log
	// reads may decompress to 256 MiB at most (ErrCorruptBatch past
	// that); kgo.MaxDecompressBatchBytes in Options sets another bound.
	LogFetchBytes int32
	// Logger receives what a subscriber skips or cannot read (a
	// malformed gap marker), and the kgo client's own log at the levels
	// its handler enables — a broker it cannot connect to, which it
	// retries by itself and no call returns — with warnings and errors
	// at most once per message every 10 s. Default: discard.
	Logger *slog.Logger
	// Options are extra kgo options, applied last. Options that change
	// what Semantics declares (acks, idempotence) make it wrong: use
	// LeaderAcks instead. kgo.FetchIsolationLevel(kgo.ReadCommitted())
	// is the way to read a Kafka topic that transactional producers
	// write with read_committed; see the package documentation
	// (Transactions) for what it costs.
	Options []kgo.Opt
}

func (c *Config) validate() error {
	switch {
	case len(c.Brokers) == 0:
		return &ConfigError{"Brokers", c.Brokers, "at least one host:port"}
	case slices.ContainsFunc(c.Brokers, func(b string) bool { return checkBroker(b) != nil }):
		return &ConfigError{"Brokers", c.Brokers, "each HOST:PORT, with a port from 1 to 65535"}
	case c.Topic == "":
		return &ConfigError{"Topic", `""`, "required"}
	case checkTopic(c.Topic) != nil:
		return &ConfigError{"Topic", c.Topic, topicRule}
	case c.From.kind == posOffset && c.From.offset < 0:
		return &ConfigError{"From", c.From.offset, "an offset must be >= 0"}
	case c.Compression != "" && codec(c.Compression) == nil:
		return &ConfigError{"Compression", c.Compression, "one of none, gzip, snappy, lz4, zstd"}
	case c.MaxBuffered < 0:
		return &ConfigError{"MaxBuffered", c.MaxBuffered, "must be >= 0 (0: the default)"}
	case c.Linger < 0:
		return &ConfigError{"Linger", c.Linger, "must be >= 0"}
	case c.LogFetchBytes < 0:
		return &ConfigError{"LogFetchBytes", c.LogFetchBytes, "must be >= 0 (0: the default)"}
	case c.Group != "" && len(c.Partitions) > 0:
		return &ConfigError{"Partitions", c.Partitions, "not with Group: the group assigns partitions"}
	case c.Instance != "" && c.Group == "":
		return &ConfigError{"Instance", c.Instance, "only with Group: a static member of a group"}
	case c.SessionTimeout < 0 || (c.SessionTimeout > 0 && c.Group == ""):
		return &ConfigError{"SessionTimeout", c.SessionTimeout, "must be > 0, and only with Group"}
	case c.RebalanceTimeout < 0 || (c.RebalanceTimeout > 0 && c.Group == ""):
		return &ConfigError{"RebalanceTimeout", c.RebalanceTimeout, "must be > 0, and only with Group"}
	}
	for _, p := range c.Partitions {
		if p < 0 {
			return &ConfigError{"Partitions", c.Partitions, "partitions are >= 0"}
		}
	}
	return nil
}

// newClient makes a kgo client of the seed brokers that logs to Logger
// (see kgoLogger), with opts, then Options.
func (c *Config) newClient(opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{kgo.SeedBrokers(c.Brokers...), kgo.WithLogger(newKgoLogger(c.logger()))}
	return kgo.NewClient(append(append(base, opts...), c.Options...)...)
}

func (c *Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// semantics is what a URL with the default parameters (no group,
// acks=all) declares; the scheme's registration shows it.
const semantics = transport.Ordered | transport.GapReports | transport.Durable | transport.Deduplicated | transport.Replay

// Semantics is what a Publisher and a subscriber of c both declare, so
// that the two ends of one URL agree:
//
//   - Ordered and GapReports always: a partition is delivered in offset
//     order, and every offset skipped is reported as a Gap.
//   - Durable and, without a group, Deduplicated with acks=all (the
//     default): a produce is answered once it is durable, and the
//     idempotent producer stores a retried record once. How durable is
//     the broker's choice: logd's --fsync policy (always, the default,
//     answers only once the record is on disk), Kafka's replication.
//     LeaderAcks gives up both.
//   - Replay without a group: a Subscriber starts at any offset or time.
//   - AtLeastOnce with a group: a GroupSubscriber commits only what the
//     application acknowledged, and what it did not is delivered again
//     — which is why a group is never Deduplicated, and, as its start is
//     the group's committed offset, not Replay.
func (c Config) Semantics() transport.Semantics {
	s := transport.Ordered | transport.GapReports
	if !c.LeaderAcks {
		s |= transport.Durable
	}
	if c.Group != "" {
		return s | transport.AtLeastOnce
	}
	s |= transport.Replay
	if !c.LeaderAcks {
		s |= transport.Deduplicated
	}
	return s
}

// codec is kgo's codec of a Compression name, nil for an unknown name.
func codec(name string) []kgo.CompressionCodec {
	switch name {
	case "none":
		return []kgo.CompressionCodec{kgo.NoCompression()}
	case "gzip":
		return []kgo.CompressionCodec{kgo.GzipCompression()}
	case "snappy":
		return []kgo.CompressionCodec{kgo.SnappyCompression()}
	case "lz4":
		return []kgo.CompressionCodec{kgo.Lz4Compression()}
	case "zstd":
		return []kgo.CompressionCodec{kgo.ZstdCompression()}
	}
	return nil
}
