package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// TestGroupAck: Close commits what was acknowledged — not what Receive
// returned — and the next member starts there. Ack refuses positions
// not delivered and streams of other topics, ignores one below what was
// acknowledged, and after Close returns ErrClosed.
func TestGroupAck(t *testing.T) {
	addr := startLogd(t, fastGroups)
	createTopic(t, addr, "acks", 1)
	cl := newClient(t, addr)
	for i := range 10 {
		produce(t, cl, &kgo.Record{Topic: "acks", Value: fmt.Appendf(nil, "%d", i)})
	}
	ctx := context.Background()
	cfg := Config{Brokers: []string{addr}, Topic: "acks", Group: "g", Options: groupOpts}
	a, err := NewGroupSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ms := messages(receiveUntil(t, a, untilMessages(10)))
	id := ms[0].Stream
	for _, tc := range []struct {
		stream transport.StreamID
		seq    uint64
		want   error
	}{
		{id, 4, nil},
		{id, 2, nil}, // below: nothing
		{id, 10, ErrNotDelivered},
		{transport.StreamID{Topic: "other"}, 0, ErrNotDelivered},
		{transport.StreamID{Topic: "acks", Partition: 1}, 0, ErrNotDelivered},
		{transport.StreamID{Topic: "acks", Feed: 1}, 0, ErrNotDelivered},
	} {
		if err := a.Ack(ctx, tc.stream, tc.seq); !errors.Is(err, tc.want) {
			t.Errorf("Ack(%s, %d): %v, want %v", tc.stream, tc.seq, err, tc.want)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Ack(ctx, id, 5); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Ack after Close: %v", err)
	}
	if c := committed(t, addr, "g", "acks", 0); c != 5 {
		t.Fatalf("committed %d, want 5: one past the last acknowledged offset", c)
	}

	b, err := NewGroupSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	evs := receiveUntil(t, b, untilMessages(5))
	if evs[0].Kind != transport.EventStreamStart || evs[0].Start.FirstSeq != 5 {
		t.Errorf("first event %v %+v, want a stream-start at 5", evs[0].Kind, evs[0].Start)
	}
	for i, m := range messages(evs) {
		if m.Seq != uint64(5+i) {
			t.Fatalf("the next member's message %d is offset %d, want %d", i, m.Seq, 5+i)
		}
	}
}

// TestRebalanceCommitsAcknowledged: when a rebalance moves a partition
// to another member, the member losing it commits what it acknowledged
// (not what it received), so the new owner starts just after it; the
// loser's later acknowledgements of it are dropped and counted.
// Autocommit is off in effect (an hour), so only the revocation commits.
func TestRebalanceCommitsAcknowledged(t *testing.T) {
	addr := startLogd(t, fastGroups)
	createTopic(t, addr, "moves", 2)
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const per = 20
	for i := range per {
		for p := range int32(2) {
			produce(t, cl, &kgo.Record{Topic: "moves", Partition: p, Value: fmt.Appendf(nil, "%d", i)})
		}
	}
	ctx := context.Background()
	cfg := Config{Brokers: []string{addr}, Topic: "moves", Group: "g",
		Options: append([]kgo.Opt{kgo.AutoCommitInterval(time.Hour)}, groupOpts...)}
	a, err := NewGroupSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ackedAt := map[int32]uint64{0: 4, 1: 6}
	for _, m := range messages(receiveUntil(t, a, untilMessages(2*per))) {
		if m.Seq == ackedAt[m.Stream.Partition] {
			if err := a.Ack(ctx, m.Stream, m.Seq); err != nil {
				t.Fatal(err)
			}
		}
	}

	b, err := NewGroupSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	first := receiveUntil(t, b, untilMessages(1))
	moved := messages(first)[0].Stream
	want := ackedAt[moved.Partition] + 1
	ms := messages(append(first, receiveUntil(t, b, untilMessages(per-int(want)-1))...))
	for i, m := range ms {
		if m.Stream != moved || m.Seq != want+uint64(i) {
			t.Fatalf("new owner's message %d: %s@%d, want %s@%d", i, m.Stream, m.Seq, moved, want+uint64(i))
		}
	}
	if err := a.Ack(ctx, moved, per-1); err != nil {
		t.Fatal(err)
	}
	if n := a.Stats().AcksNotOwned; n != 1 {
		t.Errorf("AcksNotOwned %d after acknowledging a partition moved away, want 1", n)
	}
}

// TestSubscriberIsNoAcknowledger: without a group there is nowhere to
// commit, so the subscriber does not offer Ack.
func TestSubscriberIsNoAcknowledger(t *testing.T) {
	addr := startLogd(t)
	sub, err := transport.OpenSubscriber(context.Background(), "logd://"+addr+"/plain")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, ok := sub.(transport.Acknowledger); ok {
		t.Fatal("a subscriber without a group is an Acknowledger")
	}
}

// TestEpochMarks: an acknowledgement commits with the leader epoch of
// its offset, and the marks kept stay bounded.
func TestEpochMarks(t *testing.T) {
	var p partition
	for off, epoch := range []int32{0, 0, 1, 1, 1, 3} {
		p.noteEpoch(int64(off), epoch)
	}
	for _, tc := range []struct {
		off  int64
		want int32
	}{{1, 0}, {2, 1}, {4, 1}, {5, 3}, {0, 3}} { // the last: forgotten, the oldest kept
		if got := p.epochOf(tc.off); got != tc.want {
			t.Errorf("epochOf(%d) = %d, want %d", tc.off, got, tc.want)
		}
	}
	for off := range int64(10 * maxEpochMarks) {
		p.noteEpoch(off, int32(off))
	}
	if len(p.epochs) != maxEpochMarks {
		t.Errorf("%d epoch marks kept, want %d", len(p.epochs), maxEpochMarks)
	}
}

// TestEpochsSurviveReassignment: a partition a rebalance takes away and
// hands back keeps the leader epochs of what the member delivered, so
// that a late acknowledgement of such an offset is committed with its
// epoch: marked with -1, franz-go would drop it behind the commit made
// at the revocation, which has the epoch, and the acknowledged messages
// would be delivered again after a restart.
func TestEpochsSurviveReassignment(t *testing.T) {
	g := &GroupSubscriber{Subscriber: newSubscriber(Config{Topic: "t", Group: "g"})}
	g.assigned(context.Background(), nil, map[string][]int32{"t": {0}})
	for off := range int64(5) {
		g.emit(queued{r: &kgo.Record{Topic: "t", Offset: off, LeaderEpoch: 3}, logStart: 0})
	}
	g.disown([]int32{0})
	g.assigned(context.Background(), nil, map[string][]int32{"t": {0}})
	if e := g.parts[0].epochOf(4); e != 3 {
		t.Fatalf("epoch of offset 4 after the partition came back: %d, want 3", e)
	}
}

// TestDisown: a revocation drops what the member kept for the partitions
// it lost — queued records and pending events — and counts the records.
func TestDisown(t *testing.T) {
	g := &GroupSubscriber{Subscriber: newSubscriber(Config{Topic: "t", Group: "g"})}
	g.assigned(context.Background(), nil, map[string][]int32{"t": {0, 1}})
	for off := range int64(3) {
		for p := range int32(2) {
			g.queue = append(g.queue, queued{r: &kgo.Record{Topic: "t", Partition: p, Offset: off}, logStart: 0})
		}
	}
	g.pendingPart = 1
	g.pending = []transport.Event{{Kind: transport.EventMessage}}
	g.disown([]int32{1})
	for _, q := range g.queue {
		if q.r.Partition != 0 {
			t.Fatalf("a record of the lost partition 1 still queued")
		}
	}
	if len(g.queue) != 3 || len(g.pending) != 0 || g.parts[1].owned || !g.parts[0].owned || g.stats.Disowned != 4 {
		t.Fatalf("after disown: %d queued, %d pending, owned %v/%v, Disowned %d",
			len(g.queue), len(g.pending), g.parts[0].owned, g.parts[1].owned, g.stats.Disowned)
	}
}

// TestRejoining: a group session lost to a coordinator restart (the
// member forgotten, the connection gone) is one the client joins again
// by itself, so Receive does not return it; others it does.
func TestRejoining(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&kgo.ErrGroupSession{Err: kerr.UnknownMemberID}, true},
		{&kgo.ErrGroupSession{Err: kerr.IllegalGeneration}, true},
		{&kgo.ErrGroupSession{Err: kerr.RebalanceInProgress}, true},
		{&kgo.ErrGroupSession{Err: kerr.CoordinatorNotAvailable}, true},
		{&kgo.ErrGroupSession{Err: kerr.NotCoordinator}, true},
		{&kgo.ErrGroupSession{Err: io.EOF}, true},
		{&kgo.ErrGroupSession{Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, true},
		{&kgo.ErrGroupSession{Err: kerr.GroupAuthorizationFailed}, false},
		{&kgo.ErrGroupSession{Err: kerr.InvalidGroupID}, false},
		{kerr.UnknownMemberID, false}, // not a group session notification
		{kerr.TopicAuthorizationFailed, false},
	} {
		if got := rejoining(tc.err); got != tc.want {
			t.Errorf("rejoining(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestAlreadyDeliveredSkipped: a partition handed back to the member that
// delivered up to offset 9 resumes at 10, even where the group's commit
// is lower: the application has 5..9 already.
func TestAlreadyDeliveredSkipped(t *testing.T) {
	g := &GroupSubscriber{Subscriber: newSubscriber(Config{Topic: "t", Group: "g"})}
	g.assigned(context.Background(), nil, map[string][]int32{"t": {0}})
	st := g.parts[0]
	st.started, st.next = true, 10
	for off := range int64(13) {
		if off >= 5 {
			g.emit(queued{r: &kgo.Record{Topic: "t", Offset: off}, logStart: 0})
		}
	}
	var seqs []uint64
	for _, ev := range g.pending {
		seqs = append(seqs, ev.Message.Seq)
	}
	if fmt.Sprint(seqs) != "[10 11 12]" || g.stats.AlreadyDelivered != 5 {
		t.Fatalf("delivered %v, AlreadyDelivered %d; want [10 11 12], 5", seqs, g.stats.AlreadyDelivered)
	}
}
