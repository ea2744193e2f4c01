package logd

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKgoProduceConsume: franz-go's idempotent producer (its default)
// and a consumer reading from offset 0, across a logd restart.
func TestKgoProduceConsume(t *testing.T) {
	ts := startServer(t, t.TempDir())
	cl := newClient(t, ts.addr)
	createTopic(t, cl, "events", 3)
	sent := produceN(t, cl, "events", "a", 300)
	for _, r := range sent {
		if r.ProducerID < 0 {
			t.Fatal("producer was not idempotent")
		}
	}
	checkAll := func(addr string, want int) {
		t.Helper()
		c := newClient(t, addr, kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		got := consume(t, c, want)
		perPartition := map[int32][]int64{}
		for _, r := range got {
			perPartition[r.Partition] = append(perPartition[r.Partition], r.Offset)
		}
		for p, offs := range perPartition {
			for i, o := range offs {
				if o != int64(i) {
					t.Fatalf("partition %d: record %d has offset %d", p, i, o)
				}
			}
		}
		if len(got) != want {
			t.Fatalf("got %d records, want %d", len(got), want)
		}
	}
	checkAll(ts.addr, 300)
	ts = ts.restart(t)
	cl2 := newClient(t, ts.addr)
	produceN(t, cl2, "events", "b", 100)
	checkAll(ts.addr, 400)
}

// TestKgoReplayFromTimestamp: ListOffsets by time through kgo.
func TestKgoReplayFromTimestamp(t *testing.T) {
	ts := startServer(t, t.TempDir())
	cl := newClient(t, ts.addr)
	createTopic(t, cl, "ticks", 1)
	produceN(t, cl, "ticks", "early", 50)
	time.Sleep(5 * time.Millisecond) // timestamps are milliseconds: make the next batch strictly later
	mark := time.Now()
	produceN(t, cl, "ticks", "late", 50)
	c := newClient(t, ts.addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"ticks": {0: kgo.NewOffset().AfterMilli(mark.UnixMilli())},
	}))
	got := consume(t, c, 50)
	if string(got[0].Value) != "late-0" || got[0].Offset != 50 {
		t.Fatalf("replay from %v started at %q offset %d", mark, got[0].Value, got[0].Offset)
	}
}

// TestKgoConsumerGroup: two members share a topic's partitions; when one
// leaves the other takes them all over, from the committed offsets.
func TestKgoConsumerGroup(t *testing.T) {
	ts := startServer(t, t.TempDir(), func(c *Config) { c.MinSessionTimeout = time.Second })
	admin := newClient(t, ts.addr)
	createTopic(t, admin, "orders", 4)

	group := func() *kgo.Client {
		return newClient(t, ts.addr, kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("orders"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(6*time.Second),
			kgo.DisableAutoCommit())
	}
	a, b := group(), group()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Produce in rounds until both members have read: the group settles
	// on two members whatever the timing.
	seen := map[string]int{}
	var fromA, fromB, produced int
	for (fromA == 0 || fromB == 0 || len(seen) < produced) && ctx.Err() == nil {
		if fromA == 0 || fromB == 0 {
			produceN(t, admin, "orders", fmt.Sprintf("x%d", produced), 40)
			produced += 40
		}
		for _, c := range []*kgo.Client{a, b} {
			pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			fs := c.PollFetches(pctx)
			pcancel()
			for _, r := range fs.Records() {
				seen[string(r.Value)]++
				if c == a {
					fromA++
				} else {
					fromB++
				}
			}
		}
	}
	if fromA == 0 || fromB == 0 || len(seen) != produced {
		t.Fatalf("a got %d, b got %d, distinct %d of %d: partitions not shared", fromA, fromB, len(seen), produced)
	}
	if err := a.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	b.Close() // leaves the group: a rebalance gives a every partition

	produceN(t, admin, "orders", "y", 100)
	got := consume(t, a, 100)
	for _, r := range got {
		if v := string(r.Value); v[0] != 'y' {
			t.Fatalf("after the rebalance a read %q: committed offsets not honoured", v)
		}
	}
	var parts []int
	for _, r := range got {
		parts = append(parts, int(r.Partition))
	}
	sort.Ints(parts)
	if parts[0] != 0 || parts[len(parts)-1] != 3 {
		t.Fatalf("a reads partitions %v, want all four", parts)
	}
}

// TestGroupOffsetsSurviveRestart: offsets a group committed are still
// there after logd restarts; the group resumes after them.
func TestGroupOffsetsSurviveRestart(t *testing.T) {
	ts := startServer(t, t.TempDir())
	admin := newClient(t, ts.addr)
	createTopic(t, admin, "jobs", 2)
	produceN(t, admin, "jobs", "old", 50)
	opts := []kgo.Opt{kgo.ConsumerGroup("g2"), kgo.ConsumeTopics("jobs"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit()}
	c := newClient(t, ts.addr, opts...)
	consume(t, c, 50)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close()

	ts = ts.restart(t)
	produceN(t, newClient(t, ts.addr), "jobs", "new", 4)
	for _, r := range consume(t, newClient(t, ts.addr, opts...), 4) {
		if v := string(r.Value); v[:3] != "new" {
			t.Fatalf("after restart the group re-read %q", v)
		}
	}
}
