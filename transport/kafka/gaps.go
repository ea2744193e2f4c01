package kafka

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/transport"
)

// cleanupPolicy is what a subscriber knows of its topic's cleanup.policy.
type cleanupPolicy struct {
	// known: the broker answered, or refused in a way asking again
	// would not change (then neither compact nor delete is set).
	known bool
	// compact and delete say what the policy includes.
	compact, delete bool
	// failures counts the requests in a row that failed in a way that
	// may pass (a broker not ready, a timeout); while it is not known,
	// the policy is asked again from retryAt on, not before.
	failures int
	retryAt  time.Time
}

// Backoff of a policy request that failed in a way that may pass: the
// first retry after policyRetryMin, then twice as long each time, up to
// policyRetryMax.
const (
	policyRetryMin = time.Second
	policyRetryMax = time.Minute
)

// policyBackoff is how long to wait after the nth failure in a row.
func policyBackoff(n int) time.Duration {
	d := policyRetryMin
	for i := 1; i < n && d < policyRetryMax; i++ {
		d *= 2
	}
	return min(d, policyRetryMax)
}

// errNoPolicy: a DescribeConfigs answer without cleanup.policy.
var errNoPolicy = errors.New("no cleanup.policy in the answer")

// skipped classifies offsets from..to of stream id, which the broker
// skipped, given the log start offset of the fetch that skipped them
// (-1 when not reported). Offsets below the log start were deleted —
// by retention, or by a DeleteRecords that moved the log start — or
// the subscriber was reset past them: GapRetention. Offsets at or above
// it are holes inside the log, which only compaction makes:
// GapCompacted in a topic whose cleanup.policy compacts. Without that
// policy, with the policy not (yet) known, or with a log start unknown
// in a topic that also deletes, the hole is reported as GapRetention,
// as loss: nothing says it is not. That is the safe reading: a hole of
// compaction reported as loss is a false alarm, where a real hole taken
// for compaction would hide a loss. Called with mu held.
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
// broker that refuses in a way asking again would not change (an error
// code that is not retriable: authorization, an invalid request; an
// answer without the policy) leaves the policy known and not
// compacting. Any other failure (a broker not ready, a timeout, a
// connection lost) leaves it unknown, to be asked again at the first
// hole after a backoff (policyBackoff); the holes met meanwhile are
// reported as GapRetention. Only ctx ending is returned.
func (s *Subscriber) learnPolicy(ctx context.Context) error {
	policy, err := describeCleanup(ctx, s.admin, s.topic)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		policy.known = true
		s.policy = policy
	case policyRefused(err):
		s.policy = cleanupPolicy{known: true}
		s.log.Warn("kafka transport: cleanup.policy refused: holes in the log are reported as retention", "topic", s.topic, "err", err)
	default:
		s.policy.failures++
		wait := policyBackoff(s.policy.failures)
		s.policy.retryAt = s.now().Add(wait)
		s.log.Warn("kafka transport: cleanup.policy unknown for now: holes in the log are reported as retention until it is known",
			"topic", s.topic, "err", err, "failures", s.policy.failures, "retry_in", wait)
	}
	return nil
}

// askPolicy reports whether the cleanup policy is to be asked now: it
// is not known, and no backoff is running. Called with mu held.
func (s *Subscriber) askPolicy() bool {
	return !s.policy.known && !s.now().Before(s.policy.retryAt)
}

// policyRefused reports whether a failed policy request is a refusal
// that asking again would not change.
func policyRefused(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return !ke.Retriable
	}
	return errors.Is(err, errNoPolicy)
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
	return cleanupPolicy{}, errNoPolicy
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
