package groups

import (
	"errors"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetStore keeps committed offsets. logd's storage implements it
// durably; MemoryStore keeps them in memory. Its methods may be called
// concurrently, never under the Coordinator's lock; Commit is called
// for one group at a time.
type OffsetStore interface {
	// Commit stores the offsets one OffsetCommit request commits, all or
	// none, and returns once they are as durable as the store makes
	// them. An error wrapping a *kerr.Error answers every partition with
	// that code, and is the store's refusal to log (the Coordinator only
	// logs it at Debug, so a flood of refused commits does not flood the
	// log); any other error is a failure, answered with
	// UNKNOWN_SERVER_ERROR and logged as an Error.
	Commit(group string, offsets []Committed) error
	// Fetch returns a partition's committed offset and metadata.
	Fetch(group, topic string, partition int32) (offset int64, metadata string, ok bool)
	// All returns every partition the group has committed, sorted by
	// topic and partition.
	All(group string) []Committed
}

// GroupLister is implemented by stores that can list the groups holding
// committed offsets. The Coordinator then lists those it does not hold
// in memory (after a restart, or evicted) as Empty, as Kafka does.
type GroupLister interface {
	Groups() []string
}

// Committed is one committed offset.
type Committed struct {
	Topic     string
	Partition int32
	Offset    int64
	Metadata  string
}

// OffsetCommit handles OffsetCommit (versions 0 to 9; topic IDs, v10+,
// are not supported). A commit with generation -1 is accepted while the
// group has no members, whatever member or instance ID it names (as
// Kafka's, for admin clients and consumers that assign partitions
// themselves); any other must
// come from a member of the current generation (ILLEGAL_GENERATION,
// UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) and not while the group is
// completing a rebalance (REBALANCE_IN_PROGRESS). A commit from a member
// counts as a heartbeat. Partitions that do not exist get
// UNKNOWN_TOPIC_OR_PARTITION, metadata over MaxOffsetMetadata
// OFFSET_METADATA_TOO_LARGE (counted, Stats.MetadataTooLarge); the rest
// go to the store in one Commit, which bounds what it holds (the
// MemoryStore, and logd's durable store, in bytes: topic names,
// metadata and partitions, refused with INVALID_COMMIT_OFFSET_SIZE,
// counted in Stats.CommitErrors).
// The check and the Commit happen under the group's commit lock, so the
// store receives a group's commits in the order they were checked.
func (c *Coordinator) OffsetCommit(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	l := c.lockCommits(req.Group)
	defer c.unlockCommits(req.Group, l)
	code := c.checkCommitter(req)
	type at struct{ t, p int }
	var batch []Committed
	var where []at
	var tooLarge uint64
	for _, rt := range req.Topics {
		t := kmsg.NewOffsetCommitResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewOffsetCommitResponseTopicPartition()
			p.Partition = rp.Partition
			if p.ErrorCode = code; code == 0 {
				p.ErrorCode = c.checkPartition(rt.Topic, rp)
			}
			if p.ErrorCode == codeMetadataTooLarge {
				tooLarge++
			}
			if p.ErrorCode == 0 {
				batch = append(batch, Committed{
					Topic:     strings.Clone(rt.Topic),
					Partition: rp.Partition,
					Offset:    rp.Offset,
					Metadata:  strings.Clone(deref(rp.Metadata)),
				})
				where = append(where, at{len(resp.Topics), len(t.Partitions)})
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	if tooLarge > 0 {
		c.mu.Lock()
		c.stats.MetadataTooLarge += tooLarge
		c.mu.Unlock()
		c.log.Debug("offset commit metadata too large", "group", req.Group, "partitions", tooLarge, "max", c.cfg.MaxOffsetMetadata)
	}
	if len(batch) == 0 {
		return resp
	}
	if err := c.cfg.Offsets.Commit(req.Group, batch); err != nil {
		code := codeUnknownServerError
		var ke *kerr.Error
		refused := errors.As(err, &ke)
		if refused {
			code = ke.Code
		}
		for _, a := range where {
			resp.Topics[a.t].Partitions[a.p].ErrorCode = code
		}
		c.mu.Lock()
		c.stats.CommitErrors++
		c.mu.Unlock()
		if refused {
			c.log.Debug("offset commit refused", "group", req.Group, "partitions", len(batch), "err", err)
		} else {
			c.log.Error("offset commit failed", "group", req.Group, "partitions", len(batch), "err", err)
		}
	}
	return resp
}

// checkCommitter validates who commits, as Kafka does, and returns the
// error code for every partition.
func (c *Coordinator) checkCommitter(req *kmsg.OffsetCommitRequest) int16 {
	if req.Group == "" {
		return codeInvalidGroup
	}
	instance := deref(req.InstanceID)
	asMember := req.Generation >= 0 || req.MemberID != "" || instance != ""
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[req.Group]
	switch {
	case req.Generation < 0 && (g == nil || len(g.members) == 0):
		return 0 // whatever member or instance ID it names, as Kafka
	case g == nil:
		return codeIllegalGeneration
	case !asMember:
		return codeUnknownMember
	}
	m, code := g.checkMember(instance, req.MemberID, req.Generation)
	switch {
	case code != 0:
		return code
	case g.state == StateCompletingRebalance:
		return codeRebalancing
	}
	m.lastSeen = c.cfg.Now()
	return 0
}

func (c *Coordinator) checkPartition(topic string, p kmsg.OffsetCommitRequestTopicPartition) int16 {
	switch {
	case p.Partition < 0 || !c.cfg.PartitionExists(topic, p.Partition):
		return codeUnknownPartition
	case p.Metadata != nil && len(*p.Metadata) > c.cfg.MaxOffsetMetadata:
		return codeMetadataTooLarge
	}
	return 0
}
