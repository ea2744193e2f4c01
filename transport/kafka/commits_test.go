package kafka

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAutoCommitErrorsCounted: a periodic commit that fails — the
// request, or a partition of the response (REBALANCE_IN_PROGRESS while
// a rebalance completes) — is counted and logged; one canceled, which a
// later commit replaces, is neither.
func TestAutoCommitErrorsCounted(t *testing.T) {
	var logs bytes.Buffer
	g := &GroupSubscriber{Subscriber: newSubscriber(Config{Topic: "t", Group: "g",
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}), groupName: "g"}
	resp := func(code int16) *kmsg.OffsetCommitResponse {
		r := kmsg.NewPtrOffsetCommitResponse()
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = "t"
		for _, c := range []int16{0, code} {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.ErrorCode = c
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
		return r
	}
	for _, tc := range []struct {
		resp *kmsg.OffsetCommitResponse
		err  error
		want uint64
	}{
		{resp(0), nil, 0},
		{nil, context.Canceled, 0},
		{resp(kerr.RebalanceInProgress.Code), nil, 1},
		{resp(kerr.IllegalGeneration.Code), nil, 2},
		{nil, errors.New("connection reset"), 3},
	} {
		g.autoCommitted(nil, nil, tc.resp, tc.err)
		if n := g.Stats().CommitErrors; n != tc.want {
			t.Fatalf("after a commit answered %v (err %v): CommitErrors %d, want %d", tc.resp, tc.err, n, tc.want)
		}
	}
	if n := strings.Count(logs.String(), "periodic commit failed"); n != 3 {
		t.Errorf("%d failures logged, want 3:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "REBALANCE_IN_PROGRESS") {
		t.Errorf("the log does not name the error:\n%s", logs.String())
	}
}

// TestCommitErrorsThroughSubscriber: the counters of a GroupSubscriber
// read through its Subscriber — the exported field, or a value holding
// it where a *Subscriber is expected — count its failed commits too:
// there is one set of counters, whichever Stats is called.
func TestCommitErrorsThroughSubscriber(t *testing.T) {
	g := &GroupSubscriber{Subscriber: newSubscriber(Config{Topic: "t", Group: "g"}), groupName: "g"}
	g.autoCommitted(nil, nil, nil, errors.New("connection reset"))
	var s interface{ Stats() Stats } = g.Subscriber
	if n := s.Stats().CommitErrors; n != 1 {
		t.Fatalf("CommitErrors through the Subscriber: %d, want 1 (through the GroupSubscriber: %d)", n, g.Stats().CommitErrors)
	}
}
