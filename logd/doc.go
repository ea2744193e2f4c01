// Package logd is brokerless's log daemon: a single-node log with Kafka's
// model (topics, partitions, offsets, consumer groups, retention,
// compaction, idempotent producers) that speaks the Kafka wire protocol,
// so existing clients — franz-go, librdkafka and kcat, kafka-python —
// work unchanged, and a user who outgrows one machine points the same
// clients at a Kafka or Redpanda cluster.
//
// Storage lives in logd/storage (segments, indexes, crash recovery,
// fsync policy), consumer-group coordination in logd/groups. This package
// is the network server: framing, one handler file per API key, the
// version ranges advertised by ApiVersions, and an HTTP endpoint with
// /healthz and Prometheus /metrics.
//
// Every request is decoded with github.com/twmb/franz-go/pkg/kmsg.
// Requests on one connection are answered in order, one at a time, as
// Kafka does; a connection blocked in a Fetch long-poll or a JoinGroup
// does not hold up others. A request's buffer grows as its bytes arrive,
// and the request buffers of all connections share one budget,
// Config.MaxInFlightRequestBytes; a connection without budget waits, up to
// Config.RequestTimeout from its request's first byte. A frame larger
// than Config.MaxRequestBytes, a request that does not decode, an unknown
// API key or an unsupported version closes that connection (counted, and
// logged at most once per Config.WarnLogGap); everyone else is served
// on. A Fetch answer's record sets are not copied into it: those whose
// batches were all CRC-checked already are sent from the segment files
// with sendfile(2), as Kafka serves fetches (Linux, plain TCP; a batch
// is checked the first time it is read, so a batch that fails its check
// is never sent); the rest are written from the buffer they were read
// into. An answer holds a descriptor per file-sent record set until
// written: at most 16 per connection and Config.MaxFetchFiles in all,
// past which record sets are copied (counted). A partition named twice
// in a Fetch is answered once, as by Kafka. Connections are bounded in all (MaxConnections) and per client
// address (MaxConnectionsPerIP); a new connection must send its first
// request within RequestTimeout, and an idle one is closed after
// IdleTimeout, which also caps a Fetch's MaxWait and an acks=all
// Produce's timeout. A client that closes its connection while a
// request of it waits (a Fetch long-poll, an acks=all Produce's fsync,
// a JoinGroup or SyncGroup) ends the wait at once, freeing the
// connection's slots — also when requests it pipelined behind the
// waiting one are unread, and when the connection is paused because 16
// answers already wait to be written (the reader reads no further
// request then, at most its 16 KiB read buffer ahead; on Linux a
// hang-up behind more unread bytes is seen with poll's POLLRDHUP). /healthz answers 503 with the reasons while clients are
// refused, requests go without memory or a partition is fenced. A
// Server locks (and, if need be, durably creates) its data directory:
// a second one on it, in any process, gets a *DirLockedError.
//
// Committed offsets expire as Kafka's do (offsets.retention.minutes):
// a group's are deleted once it has gone Storage.OffsetsRetention (7
// days) without a commit and without members; the group coordinator
// tells the store which groups have members, and forgets an Empty group
// whose offsets expired. When Storage.MaxGroups groups hold offsets and
// none has expired, a new group's OffsetCommit is answered
// POLICY_VIOLATION (not retriable: the client reports it), counted
// (logd_group_offsets_refused_total) and logged at most once per
// WarnLogGap; expiries are counted too (logd_group_offsets_expired_total).
// The bytes the offsets hold are bounded too, Storage.MaxOffsetBytes
// (64 MiB by default; each committed partition counts as its topic and
// metadata plus 128 bytes): without it MaxGroups groups committing
// every partition with 4 KiB of metadata would hold gigabytes. A commit
// that would pass it, none expired, is answered
// INVALID_COMMIT_OFFSET_SIZE (Kafka's answer to a commit its offsets
// topic refuses for size; not retriable), counted
// (logd_group_offsets_over_budget_total; logd_group_offsets_bytes shows
// what is held) and logged like the MaxGroups refusals. A commit that
// adds no bytes is always accepted, so a store over a lowered budget
// starts and serves. Commits for partitions that do not exist are
// answered UNKNOWN_TOPIC_OR_PARTITION, as by Kafka.
//
// With Config.Auth.Users set, clients must authenticate (SASL PLAIN,
// SCRAM-SHA-256/512, or a verified TLS client certificate naming a
// user; TLS is the listener's) before anything but ApiVersions and the
// SASL requests is answered, and every request is then checked against
// the user's grants (authorize.go; the users file, SASL verification
// and grants are in logd/auth).
package logd
