package groups

// Stats counts what a Coordinator did. Every field only grows.
type Stats struct {
	Rebalances       uint64 // rebalances started
	Generations      uint64 // rebalances completed (including those that left a group Empty)
	Expired          uint64 // members removed: no heartbeat within their session timeout
	PendingExpired   uint64 // member IDs handed out with MEMBER_ID_REQUIRED and never used
	NotRejoined      uint64 // dynamic members removed: not rejoined within the rebalance timeout
	NotSynced        uint64 // members removed: no SyncGroup within the rebalance timeout
	Left             uint64 // members removed by LeaveGroup
	Fenced           uint64 // static members replaced by a new instance
	Abandoned        uint64 // JoinGroup/SyncGroup calls whose context ended while waiting
	GroupsEvicted    uint64 // Empty groups dropped from memory to make room (MaxGroups or MaxRetainedBytes)
	GroupsRejected   uint64 // joins refused: MaxGroups groups, none Empty
	MembersRejected  uint64 // joins refused: MaxMembers reached in the group
	TooLarge         uint64 // joins and syncs refused: more than MaxMemberBytes
	OverBudget       uint64 // joins and syncs refused: MaxRetainedBytes of metadata held
	CommitErrors     uint64 // OffsetCommit requests the store failed or refused (INVALID_COMMIT_OFFSET_SIZE: over its byte budget)
	MetadataTooLarge uint64 // committed partitions refused: metadata longer than MaxOffsetMetadata
}
