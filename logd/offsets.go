package logd

import (
	"cmp"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brokerless/brokerless/logd/groups"
	"github.com/brokerless/brokerless/logd/storage"
)

// groupOffsets gives the coordinator the store's durable committed
// offsets (fdatasynced before an OffsetCommit is answered), mapping the
// store's refusals to Kafka codes. It is also the store's hook for
// expired groups: the coordinator forgets them too.
type groupOffsets struct {
	srv   *Server
	s     *storage.OffsetStore
	coord atomic.Pointer[groups.Coordinator]
	// full and overBudget limit the warnings about commits refused for
	// MaxGroups and for MaxOffsetBytes.
	full, overBudget warnLimiter
}

var (
	_ groups.OffsetStore             = (*groupOffsets)(nil)
	_ groups.GroupLister             = (*groupOffsets)(nil)
	_ storage.HookGroupOffsetsExpire = (*groupOffsets)(nil)
)

// Commit stores the offsets. A new group when Storage.MaxGroups groups
// hold offsets, none expired, is answered POLICY_VIOLATION: Kafka sets
// no such limit, so it has no code of its own, and this one says what
// happened (a server policy refused the request) and is not retriable,
// so clients report it at once. COORDINATOR_NOT_AVAILABLE or
// NOT_COORDINATOR would make them look for the coordinator and retry
// for as long as the store stays full, and UNKNOWN_SERVER_ERROR says
// nothing. (Java's consumer raises "Unexpected error in commit: Request
// parameters do not satisfy the configured policy."; franz-go returns
// kerr.PolicyViolation.) Such refusals are counted
// (logd_group_offsets_refused_total) and logged as a WARN at most once
// per WarnLogGap.
//
// A commit that would take the offsets held past
// Storage.MaxOffsetBytes, none expired, is answered
// INVALID_COMMIT_OFFSET_SIZE: what Kafka answers an OffsetCommit whose
// offsets its offsets topic refuses for their size (a record over the
// topic's configured max.message.bytes), one of the codes OffsetCommit
// is documented to return. It is not retriable, and clients name it:
// Java's consumer raises InvalidCommitOffsetSizeException ("The
// committing offset data size is not valid.") where it would call
// POLICY_VIOLATION unexpected, franz-go returns
// kerr.InvalidCommitOffsetSize, librdkafka "Broker: Invalid commit
// offset size". Such refusals are counted
// (logd_group_offsets_over_budget_total) and logged as the MaxGroups
// ones.
func (g *groupOffsets) Commit(group string, offsets []groups.Committed) error {
	out := make([]storage.GroupOffset, len(offsets))
	for i, o := range offsets {
		out[i] = storage.GroupOffset(o)
	}
	err := g.s.Commit(group, out)
	switch {
	case errors.Is(err, storage.ErrTooManyGroups):
		g.srv.metrics.groupsRefused.Add(1)
		g.srv.warn(&g.full, "logd: offset commit of a new group refused: Storage.MaxGroups groups hold offsets and none has expired (Storage.OffsetsRetention)",
			"group", clip(group, 256), "max_groups", cmp.Or(g.srv.cfg.Storage.MaxGroups, storage.DefaultMaxGroups))
		return fmt.Errorf("%w: %w", kerr.PolicyViolation, err)
	case errors.Is(err, storage.ErrOffsetsFull):
		g.srv.metrics.offsetsOverBudget.Add(1)
		g.srv.warn(&g.overBudget, "logd: offset commit refused: the committed offsets would pass Storage.MaxOffsetBytes and none has expired (Storage.OffsetsRetention)",
			"group", clip(group, 256), "partitions", len(offsets), "err", err)
		return fmt.Errorf("%w: %w", kerr.InvalidCommitOffsetSize, err)
	case errors.Is(err, storage.ErrInvalidGroup):
		return fmt.Errorf("%w: %w", kerr.InvalidGroupID, err)
	case errors.Is(err, storage.ErrMetadataTooLarge):
		return fmt.Errorf("%w: %w", kerr.OffsetMetadataTooLarge, err)
	}
	return err
}

func (g *groupOffsets) Fetch(group, topic string, partition int32) (int64, string, bool) {
	return g.s.Fetch(group, topic, partition)
}

func (g *groupOffsets) All(group string) []groups.Committed {
	all := g.s.All(group)
	out := make([]groups.Committed, len(all))
	for i, o := range all {
		out[i] = groups.Committed(o)
	}
	return out
}

func (g *groupOffsets) Groups() []string { return g.s.Groups() }

// OnGroupOffsetsExpire implements storage.HookGroupOffsetsExpire: a
// group whose offsets expired is, as in Kafka, gone once it has no
// members either.
func (g *groupOffsets) OnGroupOffsetsExpire(group string, _ int) {
	if c := g.coord.Load(); c != nil {
		c.ForgetEmpty(group)
	}
}

// clip shortens s to at most n bytes, for a log line.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
