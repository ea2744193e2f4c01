package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// TestBoundsOpenTransaction: a partition whose last records are those of
// a transaction still open. A Log reads at read_committed (fetchRequest),
// whatever the isolation level of its client's options, and a
// read_committed fetch returns nothing at or past the last stable
// offset: Bounds ends the partition there, at the open transaction's
// first offset, not at the high watermark, which a Read never reaches
// (the archive reader, reading up to Bounds' end, waited for it for
// good). A partition with no open transaction ends at its high
// watermark, its last stable offset too.
func TestBoundsOpenTransaction(t *testing.T) {
	addr, pr := txnCluster(t, "obounds", 2)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	// Offsets: partition 0 holds 0-a, 0-b at 0, 1 (a commit marker at
	// 2) and the open 0-x at 3; partition 1 holds 1-a at 0 (a commit
	// marker at 1).
	produceInTxn(t, ctx, pr, "obounds", "0-a", "0-b", "1-a")
	if err := pr.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	produceInTxn(t, ctx, pr, "obounds", "0-x") // left open
	if err := pr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"read_committed", []kgo.Opt{kgo.FetchIsolationLevel(kgo.ReadCommitted())}},
		{"read_uncommitted", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, err := OpenLog(ctx, Config{Brokers: []string{addr}, Topic: "obounds", Options: tc.opts})
			if err != nil {
				t.Fatal(err)
			}
			defer log.Close()
			for _, want := range []struct {
				p           int32
				first, next uint64
			}{{0, 0, 3}, {1, 0, 2}} {
				s := transport.StreamID{Topic: "obounds", Partition: want.p}
				first, next, err := log.Bounds(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				if first != want.first || next != want.next {
					t.Errorf("Bounds of partition %d: [%d, %d), want [%d, %d)", want.p, first, next, want.first, want.next)
				}
			}
			// What a Read returns ends before that end.
			ms, err := log.Read(ctx, transport.StreamID{Topic: "obounds", Partition: 0}, 0)
			if err != nil {
				t.Fatal(err)
			}
			checkRead(t, "Read 0@0", offsetsAndValues(ms), "0@0:0-a", "0@1:0-b")
		})
	}
}

// TestPositionAtOpenTransaction: a time stamped inside a transaction
// still open is at no offset a Log's read reaches: PositionAt answers
// the partition's end (the last stable offset), not the open record's
// offset, from which a Read would wait for good. A time of a committed
// record is that record's offset.
func TestPositionAtOpenTransaction(t *testing.T) {
	addr, pr := txnCluster(t, "opos", 1)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	t0 := time.UnixMilli(time.Now().UnixMilli())
	at := func(d time.Duration, v string) *kgo.Record {
		return &kgo.Record{Topic: "opos", Partition: 0, Value: []byte(v), Timestamp: t0.Add(d)}
	}
	// Offsets: a at 0, b at 1 (a commit marker at 2); x at 3 and y at 4
	// are open.
	if err := pr.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*kgo.Record{at(0, "a"), at(time.Second, "b")} {
		if err := pr.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := pr.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if err := pr.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*kgo.Record{at(2*time.Second, "x"), at(3*time.Second, "y")} {
		if err := pr.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	log, err := OpenLog(ctx, Config{Brokers: []string{addr}, Topic: "opos"})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	s := transport.StreamID{Topic: "opos", Partition: 0}
	for _, c := range []struct {
		d    time.Duration
		want uint64
	}{{500 * time.Millisecond, 1}, {2500 * time.Millisecond, 3}, {time.Hour, 3}} {
		got, err := log.PositionAt(ctx, s, t0.Add(c.d))
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("PositionAt(t0+%v) = %d, want %d", c.d, got, c.want)
		}
	}
}
