package kafka

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// TestTailEndsOnTransactionMarkers: on a Kafka topic that a
// transactional producer writes (logd has no transactions, so this runs
// against franz-go's in-memory fake broker), a partition's last offset
// is a transaction marker, a control record. Tail and Before return the
// data records alone, in order, none lost, and end as soon as the read
// has passed the markers, not when tailTimeout does. Partition 0 ends
// with a commit marker; partition 1 with an aborted transaction, whose
// records read_uncommitted (the default) returns and read_committed
// does not.
func TestTailEndsOnTransactionMarkers(t *testing.T) {
	addr, pr := txnCluster(t, "txn", 2)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	txn := func(commit kgo.TransactionEndTry, recs ...string) {
		t.Helper()
		produceInTxn(t, ctx, pr, "txn", recs...)
		if err := pr.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	// Offsets: partition 0 holds 0-a..0-c at 0..2 (a marker at 3), 0-d
	// at 4 (a marker at 5); partition 1 holds 1-a, 1-b at 0, 1 (a
	// marker at 2), and the aborted 1-x, 1-y at 3, 4 (a marker at 5).
	txn(kgo.TryCommit, "0-a", "0-b", "1-a", "0-c", "1-b")
	txn(kgo.TryCommit, "0-d")
	txn(kgo.TryAbort, "1-x", "1-y")

	cfg := Config{Brokers: []string{addr}, Topic: "txn"}
	checkRead(t, "Tail 10", boundedRead(t, ctx, cfg, tailRead(10)), "0@0:0-a", "0@1:0-b", "0@2:0-c", "0@4:0-d", "1@0:1-a", "1@1:1-b", "1@3:1-x", "1@4:1-y")
	// Two records each: the last two data records, though the last two
	// offsets of partition 0 hold one.
	checkRead(t, "Tail 2", boundedRead(t, ctx, cfg, tailRead(2)), "0@2:0-c", "0@4:0-d", "1@3:1-x", "1@4:1-y")
	checkRead(t, "Before 0@5, 2", boundedRead(t, ctx, cfg, beforeRead(0, 5, 2)), "0@2:0-c", "0@4:0-d")
	checkRead(t, "Before 0@4, 1", boundedRead(t, ctx, cfg, beforeRead(0, 4, 1)), "0@2:0-c")
	checkRead(t, "Before 1@3, 5", boundedRead(t, ctx, cfg, beforeRead(1, 3, 5)), "1@0:1-a", "1@1:1-b")
	// Only a marker before 1@3 in its last offset: the read ends on it.
	checkRead(t, "Before 1@3, 1", boundedRead(t, ctx, cfg, beforeRead(1, 3, 1)), "1@1:1-b")

	// At read_committed, the aborted records are not returned, and the
	// read of partition 1 ends on the abort marker.
	rc := cfg
	rc.Options = []kgo.Opt{kgo.FetchIsolationLevel(kgo.ReadCommitted())}
	checkRead(t, "Tail 10, read_committed", boundedRead(t, ctx, rc, tailRead(10)), "0@0:0-a", "0@1:0-b", "0@2:0-c", "0@4:0-d", "1@0:1-a", "1@1:1-b")
	checkRead(t, "Before 1@6, 1, read_committed", boundedRead(t, ctx, rc, beforeRead(1, 6, 1)), "1@1:1-b")
}

// offsetsAndValues is each message as partition@offset:the header v's value.
func offsetsAndValues(ms []transport.Message) []string {
	var out []string
	for _, m := range ms {
		v := "?"
		if len(m.Headers) == 1 && m.Headers[0].Key == "v" {
			v = string(m.Headers[0].Value)
		}
		out = append(out, fmt.Sprintf("%d@%d:%s", m.Stream.Partition, m.Seq, v))
	}
	return out
}

// TestTailOpenTransaction: a partition whose last records are those of
// a transaction still open (begun, produced and flushed, never ended).
// At read_committed Tail and Before end at the last stable offset, the
// open transaction's first offset: they return the committed records
// before it at once, not after tailTimeout, whose wait for the open
// records a read_committed fetch never returns would fail the read. At
// read_uncommitted (the default) they end at the high watermark and
// return the open transaction's records too, as kfake's fetch does.
func TestTailOpenTransaction(t *testing.T) {
	addr, pr := txnCluster(t, "open", 3)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	begin := func(recs ...string) {
		t.Helper()
		produceInTxn(t, ctx, pr, "open", recs...)
		if err := pr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Offsets: partition 0 holds 0-a, 0-b at 0, 1 (a commit marker at
	// 2) and the open 0-x at 3; partition 1 holds 1-a at 0 (a commit
	// marker at 1); partition 2 holds the open 2-x alone, at 0.
	begin("0-a", "0-b", "1-a")
	if err := pr.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	begin("0-x", "2-x") // left open

	rc := Config{Brokers: []string{addr}, Topic: "open", Options: []kgo.Opt{kgo.FetchIsolationLevel(kgo.ReadCommitted())}}
	checkRead(t, "Tail 10, read_committed", boundedRead(t, ctx, rc, tailRead(10)), "0@0:0-a", "0@1:0-b", "1@0:1-a")
	checkRead(t, "Tail 1, read_committed", boundedRead(t, ctx, rc, tailRead(1)), "0@1:0-b", "1@0:1-a")
	// A position past the last stable offset reads before it.
	checkRead(t, "Before 0@4, 5, read_committed", boundedRead(t, ctx, rc, beforeRead(0, 4, 5)), "0@0:0-a", "0@1:0-b")
	checkRead(t, "Before 0@3, 1, read_committed", boundedRead(t, ctx, rc, beforeRead(0, 3, 1)), "0@1:0-b")
	checkRead(t, "Before 2@1, 1, read_committed", boundedRead(t, ctx, rc, beforeRead(2, 1, 1)))

	ru := Config{Brokers: []string{addr}, Topic: "open"}
	checkRead(t, "Tail 10, read_uncommitted", boundedRead(t, ctx, ru, tailRead(10)), "0@0:0-a", "0@1:0-b", "0@3:0-x", "1@0:1-a", "2@0:2-x")
	checkRead(t, "Tail 1, read_uncommitted", boundedRead(t, ctx, ru, tailRead(1)), "0@3:0-x", "1@0:1-a", "2@0:2-x")
	checkRead(t, "Before 0@4, 5, read_uncommitted", boundedRead(t, ctx, ru, beforeRead(0, 4, 5)), "0@0:0-a", "0@1:0-b", "0@3:0-x")
	checkRead(t, "Before 2@1, 1, read_uncommitted", boundedRead(t, ctx, ru, beforeRead(2, 1, 1)), "2@0:2-x")
}

// readFunc is one of Tail's or Before's reads, as offsets and values.
type readFunc func(context.Context, Config) ([]string, error)

// boundedRead runs read with a deadline well short of tailTimeout: a
// deadlock detector, not a measure of speed. A read that waits for a
// record that never comes (past the markers, or in an open transaction)
// fails the test when it passes.
func boundedRead(t *testing.T, ctx context.Context, cfg Config, read readFunc) []string {
	t.Helper()
	rctx, cancel := context.WithTimeout(ctx, tailTimeout/3)
	defer cancel()
	got, err := read(rctx, cfg)
	if err != nil {
		t.Fatalf("%v (a read that waits for a record that never comes)", err)
	}
	return got
}

// tailRead is Tail(n). Its partitions come in the order the broker
// lists them, each oldest first: sorted by partition alone, stably.
func tailRead(n int) readFunc {
	return func(ctx context.Context, cfg Config) ([]string, error) {
		ms, err := Tail(ctx, cfg, n)
		slices.SortStableFunc(ms, func(a, b transport.Message) int { return cmp.Compare(a.Stream.Partition, b.Stream.Partition) })
		return offsetsAndValues(ms), err
	}
}

// beforeRead is Before(p, pos, n).
func beforeRead(p int32, pos uint64, n int) readFunc {
	return func(ctx context.Context, cfg Config) ([]string, error) {
		ms, err := Before(ctx, cfg, p, pos, n)
		return offsetsAndValues(ms), err
	}
}

// checkRead compares a read's offsets and values with want.
func checkRead(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if g, w := strings.Join(got, " "), strings.Join(want, " "); g != w {
		t.Errorf("%s: %q, want %q", what, g, w)
	}
}

// produceInTxn begins a transaction of pr and produces recs to topic in
// it, each to the partition its value starts with ("1-a" to partition
// 1), its value also in a header.
func produceInTxn(t *testing.T, ctx context.Context, pr *kgo.Client, topic string, recs ...string) {
	t.Helper()
	if err := pr.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		var p int32
		if _, err := fmt.Sscanf(r, "%d-", &p); err != nil {
			t.Fatal(err)
		}
		rec := &kgo.Record{Topic: topic, Partition: p, Value: []byte(r), Headers: []kgo.RecordHeader{{Key: "v", Value: []byte(r)}}}
		if err := pr.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// txnCluster starts franz-go's in-memory broker (kfake; logd has no
// transactions) with topic of parts partitions, and returns its address
// and a transactional producer that picks each record's partition.
func txnCluster(t *testing.T, topic string, parts int32) (string, *kgo.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	return addr, newClient(t, addr, kgo.TransactionalID("tail-"+topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
}
