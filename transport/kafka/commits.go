package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// autoCommitted learns how a periodic commit of what was acknowledged
// went (kgo.AutoCommitCallback, which replaces the client's own: that
// one only logs). A failure is counted (Stats.CommitErrors) and logged;
// the marks stay, and the next commit carries them. One canceled is
// not a failure: a later commit, or Close, took its place. It must not
// wait for what a commit holds (mu is free during one, but a Close or
// revocation under way may wait for the commit): the client calls it
// before a commit it made later goes ahead.
func (g *GroupSubscriber) autoCommitted(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
	err = commitErr(resp, err)
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	g.commitErrors.Add(1)
	// REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION and the like: the
	// rebalance under way commits before it takes partitions away, and
	// the next periodic commit, in the new generation, the rest.
	g.log.Warn("kafka transport: periodic commit failed: the next commit retries it",
		"group", g.groupName, "err", err)
}

// commitMarked commits what is marked, and returns when ctx ends even
// if the client's commit has not: the client issues a commit only once
// the one before it (a periodic commit, which ctx does not end) is
// answered, and waits for that without a deadline — for as long as a
// broker that took the request leaves it unanswered. A commit given up
// on may still be made, after the one before it; its error is ctx's.
// What Acks marked while the client did not take marks (see remarks) is
// committed after, by a commit of its own, in the generation the marks
// were read in (see commitRemarks).
func (g *GroupSubscriber) commitMarked(ctx context.Context) error {
	g.mu.Lock()
	rs := g.remarks()
	g.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		err := g.cl.CommitMarkedOffsets(ctx)
		if err == nil {
			err = g.commitRemarks(ctx, rs)
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		select {
		case err := <-done: // answered as ctx ended
			return err
		default:
			return ctx.Err()
		}
	}
}

// commitErr is the first error of a commit: err, or a partition's.
func commitErr(resp *kmsg.OffsetCommitResponse, err error) error {
	if err != nil || resp == nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}
