package kafka

import (
	"context"
	"errors"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/transport"
)

// cleanupPolicy is what a subscriber knows of its topic's cleanup.policy.
type cleanupPolicy struct {
	known bool // asked (an answer, or a refusal: then neither is set)
	// compact and delete say what the policy includes.
	compact, delete bool
}

// skipped classifies offsets from..to of stream id, which the broker
// skipped, given the log start offset of the fetch that skipped them
// (-1 when not reported). Offsets below the log start were deleted —
// by retention, or by a DeleteRecords that moved the log start — or
// the subscriber was reset past them: GapRetention. Offsets at or above
// it are holes inside the log, which only compaction makes:
// GapCompacted in a topic whose cleanup.policy compacts. Without that
// policy, or with a log start unknown in a topic that also deletes, the
// hole is reported as GapRetention, as loss: nothing says it is not.
// Called with mu held.
func (s *Subscriber) skipped(id transport.StreamID, from, to, logStart int64) []transport.Gap {
	var gaps []transport.Gap
	gap := func(a, b int64, reason transport.GapReason) {
		gaps = append(gaps, transport.Gap{Stream: id, From: uint64(a), To: uint64(b), Reason: reason})
	}
	if logStart > from {
		deleted := min(logStart-1, to)
		gap(from, deleted, transport.GapRetention)
		from = deleted + 1
	}
	if from > to {
		return gaps
	}
	reason := transport.GapRetention
	if s.policy.compact && (logStart >= 0 || !s.policy.delete) {
		reason = transport.GapCompacted
	}
	gap(from, to, reason)
	return gaps
}

// holeAboveStart reports whether q's record follows a hole that reaches
// above the log start, whose reason depends on the cleanup policy.
// Called with mu held.
func (s *Subscriber) holeAboveStart(q queued) bool {
	st := s.parts[q.r.Partition]
	if st == nil {
		st = &partition{next: s.start}
	}
	next := s.expected(st, q)
	return next >= 0 && q.r.Offset > next && q.r.Offset-1 >= max(next, q.logStart)
}

// learnPolicy asks the broker for the topic's cleanup.policy
// (DescribeConfigs) and keeps the answer for the subscriber's life. A
// broker that refuses (an authorization error, an old broker) leaves the
// policy known and not compacting; only ctx ending leaves it unknown.
func (s *Subscriber) learnPolicy(ctx context.Context) error {
	policy, err := describeCleanup(ctx, s.cl, s.topic)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.log.Warn("kafka transport: cleanup.policy unknown: holes in the log are reported as retention", "topic", s.topic, "err", err)
	}
	s.mu.Lock()
	policy.known = true
	s.policy = policy
	s.mu.Unlock()
	return nil
}

// requester is the part of a kgo.Client describeCleanup needs.
type requester interface {
	Request(context.Context, kmsg.Request) (kmsg.Response, error)
}

// describeCleanup asks for topic's cleanup.policy.
func describeCleanup(ctx context.Context, cl requester, topic string) (cleanupPolicy, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeTopic
	res.ResourceName = topic
	res.ConfigNames = []string{"cleanup.policy"}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return cleanupPolicy{}, err
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return cleanupPolicy{}, err
		}
		for _, c := range r.Configs {
			if c.Name == "cleanup.policy" && c.Value != nil {
				return parsePolicy(*c.Value), nil
			}
		}
	}
	return cleanupPolicy{}, errors.New("no cleanup.policy in the answer")
}

// parsePolicy reads a cleanup.policy value: "delete", "compact",
// "compact,delete".
func parsePolicy(v string) cleanupPolicy {
	var p cleanupPolicy
	for part := range strings.SplitSeq(v, ",") {
		switch strings.TrimSpace(part) {
		case "compact":
			p.compact = true
		case "delete":
			p.delete = true
		}
	}
	return p
}
