// Package kafka is the transport for logd — and for any Kafka-protocol
// broker: Kafka, Redpanda — built on the franz-go client (kgo).
// Importing it registers the "logd" and "kafka" URL schemes:
//
//	logd://127.0.0.1:9092/prices
//	logd://127.0.0.1:9092/prices?from=42
//	logd://127.0.0.1:9092/prices?group=dashboard
//
// The URL's path is the topic. Parameters, each at most once (any other
// is refused with an error wrapping transport.ErrBadURL):
//
//   - from: earliest (the default), latest, an offset, or an RFC 3339
//     time: where a subscriber starts, and where a group member starts a
//     partition its group has no committed offset for;
//   - partition: read only this partition, and publish to it;
//   - group: consume as a member of this consumer group (not with
//     partition);
//   - acks: all (the default) or leader.
//
// # Streams and positions
//
// A stream is a partition, named by its topic and partition number
// (transport.StreamID{Topic, Partition}; Feed and Session are zero), and
// a message's Seq is its offset. A publisher restart continues the same
// stream, as it does in a log. A subscriber delivers each partition in
// offset order, with a StreamStart before its first event (and again
// before its first event once a rebalance gives a group member back a
// partition it lost: see GroupSubscriber). Offsets skipped are reported
// as a Gap, with a reason:
//
//   - GapRetention: offsets below the partition's log start — deleted by
//     retention, or by DeleteRecords, before the subscriber read them, or
//     passed by a reset to the log start. Lost.
//   - GapCompacted: holes above the log start in a topic whose
//     cleanup.policy compacts (learned at the first hole, with a
//     DescribeConfigs request, and kept): each record removed was
//     superseded by a later one with its key. Not lost (Gap.Lost is
//     false). A hole in a topic that does not compact, which only a
//     compaction under an earlier policy leaves, or a broker that
//     refuses DescribeConfigs (an authorization error), is reported as
//     GapRetention: as loss, since nothing says it is not. A request
//     that fails in a way that may pass (a broker not ready, a timeout)
//     settles nothing: it is made again at the first hole 1 s later,
//     then after twice as long each time up to a minute, and the holes
//     met meanwhile are reported as GapRetention — a false alarm if they
//     were compaction's, where the other reading would hide a loss.
//
// A subscriber that starts at an exact offset, or a group member that
// resumes at a committed one, reports what it cannot have from there as
// a Gap before the first record; one that starts at the earliest record
// expects the log start. An offset past a partition's end (a saved
// offset of a log since recreated) starts at the end: a from= offset,
// for a Subscriber and for a group member's partitions its group
// committed nothing for, starts there; a committed offset, which wins
// over from=, is reset to the log start, as Kafka's
// auto.offset.reset=earliest does. Either way the partition's first
// record, below the offset asked, is logged as a warning (Config.Logger). Transaction markers take offsets without being
// messages; they are skipped silently.
//
// A record that is a gap marker (transport.GapMarker, written by a pipe
// for messages its source lost) is delivered as the Gap it stands for:
// of the marker's origin stream, with its range and reason, not as a
// message; an end marker (transport.EndMarker, for a feed session its
// publisher closed) as that stream's StreamEnd. A record with the gap-marker header that cannot be read as
// one is delivered as a message, headers and all, logged, and counted
// (Stats.MalformedMarkers): nothing is hidden, and one bad record does
// not stop the partition.
//
// # Transactions
//
// logd has no transactions: it refuses a transactional producer
// (InitProducerID with a transactional id: TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
// and a transactional or control batch, so its last stable offset is
// always its high watermark, and a consumer's isolation level changes
// nothing there. Subscribers and group members read at kgo's default
// isolation level, read_uncommitted, which is also the Java consumer's
// default (isolation.level; librdkafka's is read_committed): on a Kafka
// topic that transactional producers write, they deliver the records of
// open and aborted transactions too, and skip the transaction markers.
// kgo.FetchIsolationLevel(kgo.ReadCommitted()) in Config.Options has
// them deliver only committed records, but the client then drops aborted
// records without saying which, so their offsets are reported as a Gap,
// as loss (GapRetention): a subscriber cannot tell them from records it
// lost. That is why read_committed is not the default here, though it is
// what a consumer of transactional data should read at. A Log (OpenLog)
// reads at read_committed and decodes batches itself, skipping aborted
// transactions by their producer ids, whatever Config.Options say; its
// Bounds end a partition at the last stable offset, where its reads
// stop. Either way a group member's end, where a From offset past it starts, is
// the high watermark (see GroupSubscriber).
// Tail and Before, by contrast, end where a consumer at the client's
// isolation level reads up to: the high watermark at read_uncommitted,
// the last stable offset at read_committed (see Tail).
//
// # Publishing
//
// Publish hands a record to the client's bounded buffer, waiting for room
// while honouring its context; once it has returned, the context no
// longer matters. The Publisher is also a transport.ReceiptPublisher:
// PublishReceipt reports each record's partition and offset once the
// broker has acknowledged it.
//
// # Consuming: Subscriber and GroupSubscriber
//
// Without a group, the subscriber is a *Subscriber: it reads from a
// position (replay) and commits nothing, so it is not a
// transport.Acknowledger — there is nowhere an acknowledgement could go.
// With a group, it is a *GroupSubscriber, an Acknowledger: it commits
// only what the application acknowledged, so what the application had
// received but not finished when it crashed is delivered again to the
// group (at least once). See GroupSubscriber.
//
// # Logging
//
// Config.Logger (default: discard) receives what a subscriber skips or
// cannot read, and the kgo client's own log at the levels its handler
// enables. A broker the client cannot reach is retried by the client and
// reported to no call — a Receive just waits — so its warnings are how
// an outage shows; each warning or error message is logged at most once
// every 10 s, with the count of those not logged since
// (not_logged_since). transport.Open gives no Logger: a program that
// wants one parses the URL (ParseURL), sets it, and uses NewEndpoint.
//
// # Semantics
//
// The publisher and the subscriber of one URL declare the same set,
// derived from its parameters (Config.Semantics): Ordered and GapReports
// always; with acks=all, Durable — the broker answers once the record is
// durable, which is its own choice: logd's --fsync policy (always, its
// default, means on disk), Kafka's replication — and, without a group,
// Deduplicated (the idempotent producer); without a group, Replay; with
// a group, AtLeastOnce, and so neither Deduplicated nor Replay.
// acks=leader turns idempotence off: neither Durable nor Deduplicated.
package kafka
