package kafka

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// TestDataLossDropsQueuedLostRecords: records of a partition fetched
// before the broker reported that it lost them, still queued (or
// pending: a record whose first event Receive returned) when the loss
// arrives, are the lost records, not the ones the broker holds at those
// offsets now: they are dropped, and the partition goes on with the
// records fetched from the reset point on. Records queued below the
// reset point are not lost: they are delivered, once. Delivering the
// old ones would give the application records the broker no longer
// has, and then skip the new ones at the same offsets as "already
// delivered": a loss no Gap reports.
func TestDataLossDropsQueuedLostRecords(t *testing.T) {
	for _, tc := range []struct {
		name      string
		first     int64 // old records first..fetched-1 were fetched
		fetched   int64
		delivered int // of which Receive returned this many messages
		resetTo   int64
		together  bool     // the new records come in the poll that reports the loss, before it (as the client orders them)
		want      []string // what Receive returns next
	}{
		{name: "queued across the reset point", fetched: 10, delivered: 5, resetTo: 6,
			want: []string{"old-5", "new-6", "new-7", "new-8", "new-9"}},
		{name: "reset below what was delivered", fetched: 10, delivered: 8, resetTo: 6,
			want: []string{"new-6", "new-7", "new-8", "new-9"}},
		{name: "new records in the poll reporting the loss", fetched: 10, delivered: 5, resetTo: 6, together: true,
			want: []string{"old-5", "new-6", "new-7", "new-8", "new-9"}},
		{name: "record queued at the reset point", fetched: 7, delivered: 6, resetTo: 6,
			want: []string{"new-6", "new-7", "new-8", "new-9"}},
		// Receive returned the partition's StreamStart, its record's
		// message is pending.
		{name: "pending record lost", first: 6, fetched: 7, resetTo: 6,
			want: []string{"new-6", "new-7", "new-8", "new-9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &GroupSubscriber{Subscriber: newSubscriber(Config{Topic: "t", Group: "g"})}
			g.cl = offlineClient(t)
			g.policy = cleanupPolicy{known: true, delete: true}
			g.assigned(context.Background(), nil, map[string][]int32{"t": {0}})
			takeFetch(t, g, kgo.FetchPartition{Records: records("old", tc.first, tc.fetched), LogStartOffset: tc.first})
			if tc.delivered == 0 {
				if ev, ok, err := g.step(context.Background()); !ok || err != nil || ev.Kind != transport.EventStreamStart {
					t.Fatalf("first step: %v %v %v, want the StreamStart", ev.Kind, ok, err)
				}
			} else if got := stepAll(t, g, tc.delivered); len(got) != tc.delivered {
				t.Fatalf("before the loss: %v, want %d messages", got, tc.delivered)
			}
			loss := kgo.FetchPartition{Err: &kgo.ErrDataLoss{Topic: "t", ConsumedTo: tc.fetched, ConsumedToEpoch: -1, ResetTo: tc.resetTo, ResetToEpoch: -1}}
			fresh := kgo.FetchPartition{Records: records("new", tc.resetTo, 10)}
			if tc.together {
				takeFetch(t, g, fresh, loss)
			} else {
				takeFetch(t, g, loss)
				takeFetch(t, g, fresh)
			}
			if got := stepAll(t, g, -1); !slices.Equal(got, tc.want) {
				t.Fatalf("after the loss, Receive returns %v, want %v", got, tc.want)
			}
		})
	}
}

// records are records of partition 0 of "t" at offsets from..to-1,
// valued prefix-offset.
func records(prefix string, from, to int64) []*kgo.Record {
	var rs []*kgo.Record
	for off := from; off < to; off++ {
		rs = append(rs, &kgo.Record{Topic: "t", Offset: off, LeaderEpoch: -1, Value: fmt.Appendf(nil, "%s-%d", prefix, off)})
	}
	return rs
}

// takeFetch has g take one poll of parts of partition 0 of "t", in
// order, each its own fetch (as the client returns a fetch it made and
// a loss it reports).
func takeFetch(t *testing.T, g *GroupSubscriber, parts ...kgo.FetchPartition) {
	t.Helper()
	var fetches kgo.Fetches
	for _, p := range parts {
		fetches = append(fetches, kgo.Fetch{Topics: []kgo.FetchTopic{{Topic: "t", Partitions: []kgo.FetchPartition{p}}}})
	}
	g.take(fetches)
}

// stepAll returns what g's next events are, messages as their values
// and other events by kind, until n messages, or (n < 0) until none is
// left.
func stepAll(t *testing.T, g *GroupSubscriber, n int) []string {
	t.Helper()
	var got []string
	msgs := 0
	for n < 0 || msgs < n {
		ev, ok, err := g.step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		switch ev.Kind {
		case transport.EventMessage:
			got = append(got, string(ev.Message.Payload))
			msgs++
		case transport.EventStreamStart:
		default:
			got = append(got, fmt.Sprintf("%v", ev.Kind))
		}
	}
	return got
}
