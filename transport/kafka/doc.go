// Package kafka is the transport for logd — and for any Kafka-protocol
// broker: Kafka, Redpanda — built on the franz-go client (kgo).
// Importing it registers the "logd" and "kafka" URL schemes:
//
//	logd://127.0.0.1:9092/prices
//	logd://127.0.0.1:9092/prices?from=earliest
//	logd://127.0.0.1:9092/prices?group=dashboard
//
// The URL's path is the topic. Parameters: from (earliest, the default;
// latest; an offset; or a time, RFC 3339, to replay from), partition (to
// read one partition), group (consume as a member of a consumer group,
// committing offsets, starting from the committed offsets), acks (all,
// the default, or leader).
//
// A stream is a partition, named by its topic and partition number
// (StreamID{Topic, Partition}; Feed and Session are zero), and a
// message's Seq is its offset.
// Publisher restarts therefore continue the same stream, as they do in a
// log. Offsets that will never be delivered — removed by retention or
// compaction before this subscriber read them — are reported as a Gap.
//
// Semantics: ordered, deduplicated (idempotent producer), durable,
// replayable, with gap reports.
package kafka
