package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRemarkNotCommittedInLaterGeneration: kept marks (see remarks) are
// read, with the partitions' ownership, under mu, and committed after:
// Close's commit after the client's own, the periodic one after a
// wait for rewindMu. A rejoin between the two (a session lost, the
// group rebalanced) may have given the partition to another member,
// whose commit the kept mark would move back: the commit must be made
// in the generation the marks were read in, or not at all. Here a
// second member's join makes the generation change between the read
// and the commit. The marks are made by the test, not by an Ack: the
// client, which has the partition's records here, would take an Ack's
// mark too, and commit it itself, legitimately, in the new generation.
func TestRemarkNotCommittedInLaterGeneration(t *testing.T) {
	addr, g, stream := tenDelivered(t, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	rs := remarkSet{offsets: map[int32]kgo.EpochOffset{stream.Partition: {Epoch: -1, Offset: 10}}}
	rs.member, rs.gen = g.cl.GroupMetadata()
	b, err := NewGroupSubscriber(ctx, Config{Brokers: []string{addr}, Topic: "loss", Group: "g",
		Options: append([]kgo.Opt{kgo.AutoCommitInterval(time.Hour)}, groupOpts...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	for {
		if _, gen := g.cl.GroupMetadata(); gen != rs.gen {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the generation stayed %d after a second member joined", rs.gen)
		case <-time.After(10 * time.Millisecond):
		}
	}
	err = g.commitRemarks(ctx, rs)
	if c := committed(t, addr, "g", "loss", stream.Partition); c != -1 {
		t.Fatalf("marks read in generation %d were committed in a later one (commit error %v): the group's commit is %d, not -1 (none)", rs.gen, err, c)
	}
	if err == nil {
		t.Fatal("a commit of marks of a past generation returned nil")
	}
}

// TestRemarkCommittedInItsGeneration: commitRemarks, with the
// generation current, commits the marks itself (the client's commit
// does not carry a partition it dropped the mark of).
func TestRemarkCommittedInItsGeneration(t *testing.T) {
	addr, g, stream := tenDelivered(t, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	rs := remarkSet{offsets: map[int32]kgo.EpochOffset{stream.Partition: {Epoch: -1, Offset: 7}}}
	rs.member, rs.gen = g.cl.GroupMetadata()
	if err := g.commitRemarks(ctx, rs); err != nil {
		t.Fatal(err)
	}
	if c := committed(t, addr, "g", "loss", stream.Partition); c != 7 {
		t.Fatalf("commitRemarks of offset 7 in generation %d: the group's commit is %d", rs.gen, c)
	}
}
