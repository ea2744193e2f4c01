package logd

import "github.com/brokerless/brokerless/logd/groups"

// coordinatorCounters names each counter of the group coordinator's
// Stats on the metrics page: what it refused and dropped to stay within
// its bounds (groups, members, retained bytes, metadata) is visible to
// an operator, as the store's refusals are.
var coordinatorCounters = []struct {
	name, help string
	v          func(groups.Stats) uint64
}{
	{"logd_group_rebalances_total", "Consumer group rebalances started.", func(s groups.Stats) uint64 { return s.Rebalances }},
	{"logd_group_generations_total", "Consumer group rebalances completed (including those that left a group Empty).", func(s groups.Stats) uint64 { return s.Generations }},
	{"logd_group_members_expired_total", "Group members removed: no heartbeat within their session timeout.", func(s groups.Stats) uint64 { return s.Expired }},
	{"logd_group_pending_members_expired_total", "Member ids handed out with MEMBER_ID_REQUIRED and never used.", func(s groups.Stats) uint64 { return s.PendingExpired }},
	{"logd_group_members_not_rejoined_total", "Dynamic group members removed: not rejoined within the rebalance timeout.", func(s groups.Stats) uint64 { return s.NotRejoined }},
	{"logd_group_members_not_synced_total", "Group members removed: no SyncGroup within the rebalance timeout.", func(s groups.Stats) uint64 { return s.NotSynced }},
	{"logd_group_members_left_total", "Group members removed by LeaveGroup.", func(s groups.Stats) uint64 { return s.Left }},
	{"logd_group_members_fenced_total", "Static group members replaced by a new instance.", func(s groups.Stats) uint64 { return s.Fenced }},
	{"logd_group_calls_abandoned_total", "JoinGroup and SyncGroup calls whose connection or deadline ended while they waited.", func(s groups.Stats) uint64 { return s.Abandoned }},
	{"logd_groups_evicted_total", "Empty consumer groups dropped from memory to make room: for a new group at the most groups, or for metadata at its byte bound (Config.MaxGroupBytes).", func(s groups.Stats) uint64 { return s.GroupsEvicted }},
	{"logd_groups_refused_total", "Joins of a new consumer group refused: the most groups are held and none is Empty to evict.", func(s groups.Stats) uint64 { return s.GroupsRejected }},
	{"logd_group_members_refused_total", "Joins refused (GROUP_MAX_SIZE_REACHED): the group has its most members.", func(s groups.Stats) uint64 { return s.MembersRejected }},
	{"logd_group_members_too_large_total", "Joins and syncs refused (INVALID_REQUEST): a member's protocol metadata or assignment over its byte bound.", func(s groups.Stats) uint64 { return s.TooLarge }},
	{"logd_group_over_budget_total", "Joins and syncs refused: the consumer groups' metadata held in memory at its bound (Config.MaxGroupBytes).", func(s groups.Stats) uint64 { return s.OverBudget }},
	{"logd_group_commit_errors_total", "OffsetCommit requests the offsets store failed or refused.", func(s groups.Stats) uint64 { return s.CommitErrors }},
	{"logd_group_commit_metadata_too_large_total", "Committed partitions refused (OFFSET_METADATA_TOO_LARGE): metadata longer than the bound.", func(s groups.Stats) uint64 { return s.MetadataTooLarge }},
}

// writeCoordinatorMetrics reports the group coordinator's counters.
func (s *Server) writeCoordinatorMetrics(p *promWriter) {
	st := s.groups.Stats()
	for _, c := range coordinatorCounters {
		p.counter(c.name, c.help, c.v(st))
	}
}
