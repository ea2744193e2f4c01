// Package groups is logd's consumer-group coordinator: the broker side of
// Kafka's classic group protocol (JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup) and of committed offsets (OffsetCommit, OffsetFetch), with
// DescribeGroups and ListGroups for tools. It speaks in
// github.com/twmb/franz-go/pkg/kmsg requests and responses; the Kafka
// server decodes a request, calls the matching [Coordinator] method, and
// encodes the response it gets back at the request's version.
//
// # Groups and generations
//
// A group is Empty (no members), PreparingRebalance (waiting for its
// members to join again), CompletingRebalance (joined; waiting for the
// leader's assignment) or Stable. A rebalance starts when a member
// joins, leaves, changes its protocols or dies, and completes once every
// member has joined again, or when the rebalance timeout (the largest of
// the members' rebalance timeouts; v0 clients' session timeout) passes,
// whichever is first; dynamic members that did not rejoin are removed,
// static ones are kept for their session timeout, as Kafka does. Each
// completed rebalance is a new generation with one leader (the old
// leader when it rejoined), one protocol (the one supported by every
// member that most members prefer; ties go to the smallest name), and a
// JoinGroup answer for every member; the leader's lists every member and
// its metadata. The leader's SyncGroup carries the assignments; it makes
// the group Stable and answers every member waiting in SyncGroup.
// Members that have not sent SyncGroup within the rebalance timeout are
// removed, and the group rebalances again. Members of a "consumer" group
// that the leader assigned nothing get an encoded empty assignment
// rather than zero bytes, which some consumers cannot decode.
//
// JoinGroup v4+ without a member ID is answered MEMBER_ID_REQUIRED with
// a new ID (client ID, "-", a random UUID); the client joins again with
// it. Earlier versions get their ID with their generation. A static
// member (a group instance ID, v5+) never needs that round trip: its
// instance ID maps to its member ID, and a join with the instance ID and
// no member ID is the same instance restarted: it takes the old
// member's place and assignment under a new member ID, and the old ID is
// fenced (FENCED_INSTANCE_ID). A Stable group whose chosen protocol does
// not change is not rebalanced by it (KIP-345); a replaced leader is
// told to skip assignment (KIP-814, v9+).
//
// Members must heartbeat within their session timeout, which must lie in
// [Config.MinSessionTimeout, Config.MaxSessionTimeout]. A member waiting
// in JoinGroup or SyncGroup is never expired. Expiry and deadlines are
// driven by [Coordinator.Tick], which [Coordinator.Run] calls on a
// ticker; tests call it with a fake clock.
//
// # Waiting calls
//
// JoinGroup and SyncGroup may block until the group is ready. Each
// blocked call is the caller's own goroutine waiting on a buffered
// channel; the coordinator runs no goroutine per group or member. When
// the caller's context ends (its client went away, or the server is
// stopping) the call stops waiting and returns COORDINATOR_NOT_AVAILABLE,
// and the group forgets it: the member is then treated like one that has
// not rejoined yet.
//
// # Offsets
//
// Committed offsets go to an [OffsetStore], durable in production, one
// Commit call per request (all its accepted partitions at once). A
// commit with generation -1 is a "simple" commit, for admin clients and
// consumers that assign partitions themselves; it is accepted when the
// group has no members, whatever member or instance ID it names, as
// Kafka accepts it. Any other commit must come from a member of the
// current generation, and not while the group is completing a rebalance.
// Partitions that do not exist are refused one by one. OffsetFetch
// answers -1 for partitions without a commit, and every committed
// partition when the request names no topics.
//
// # Limits
//
// Groups held in memory are bounded by Config.MaxGroups: a new group
// evicts the group that has been Empty longest (its offsets stay in the
// store) or, when none is Empty, is refused with
// COORDINATOR_NOT_AVAILABLE. Members (and member IDs handed out but not
// yet used) are bounded per group by Config.MaxMembers
// (GROUP_MAX_SIZE_REACHED), a member's protocol metadata and assignment
// by Config.MaxMemberBytes (INVALID_REQUEST), and commit metadata by
// Config.MaxOffsetMetadata (OFFSET_METADATA_TOO_LARGE, per partition).
// The names, protocol types and chosen protocols of the groups held
// (Empty ones too), what all members hold (protocol metadata, assignments, member,
// instance and client IDs, client hosts) and the member IDs handed out
// are bounded together in bytes by Config.MaxRetainedBytes: Empty
// groups are evicted to make room, the longest Empty first, and when
// that is not enough the call is refused (COORDINATOR_NOT_AVAILABLE,
// which clients retry; a join refused so makes no group). The offsets a
// [MemoryStore] holds are bounded in bytes as logd's durable store's are
// (Storage.MaxOffsetBytes; the accounting is shared, logd/internal/
// offbudget): 64 MiB by default ([NewMemoryStoreMax] sets another), past
// which a commit that adds bytes is refused with
// INVALID_COMMIT_OFFSET_SIZE ([ErrOffsetsFull]). Every refusal is
// counted in [Stats]. Tick visits every member of every group, and a
// join or leave counts the members of its group, so the work done is
// bounded by these limits too.
//
// Group membership itself is not persisted: after a restart, members get
// UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION and join again, as they do
// after a Kafka coordinator moves. Offsets are persisted by the store.
// Only the classic protocol is spoken (no KIP-848 ConsumerGroupHeartbeat,
// no transactional offsets, no topic IDs).
package groups
