package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/transport"
)

// TestDataLossReportedByClient: a data loss as the client itself
// detects and reports it, not handed to take by the test. Offsets 0..9
// delivered and 5 acknowledged (the commit, 6, is not past the reset
// point: no rewind, whose SetOffsets would have the client fetch the
// reset point again); then the broker answers a fetch at 10
// OFFSET_OUT_OF_RANGE and lists its end at 6: the log shrank below
// what was consumed, and the client resets (ConsumeResetOffset) and
// reports *kgo.ErrDataLoss. The records it fetches from the reset
// point on are what the broker holds now: every one is delivered (none
// skipped as already delivered), and Close commits the reset point.
// franz-go reports the loss with a fetch of its own, drained after the
// records of the same poll, and moves the cursor to the reset point
// before it fetches from there: a poll never holds records of the
// partition fetched before the loss with it, but may hold those
// fetched from the reset point ("same poll": the member polls only
// once they are buffered), which take must not drop as lost.
func TestDataLossReportedByClient(t *testing.T) {
	for _, samePoll := range []bool{false, true} {
		t.Run(fmt.Sprintf("same poll %v", samePoll), func(t *testing.T) { testDataLossReportedByClient(t, samePoll) })
	}
}

// resetBuffered closes buffered once the client buffered a record at
// offset at after the loss was answered (after).
type resetBuffered struct {
	after    *atomic.Bool
	at       int64
	once     sync.Once
	buffered chan struct{}
}

func (h *resetBuffered) OnFetchRecordBuffered(r *kgo.Record) {
	if h.after.Load() && r.Offset == h.at {
		h.once.Do(func() { close(h.buffered) })
	}
}

func testDataLossReportedByClient(t *testing.T, samePoll bool) {
	c, addr := groupCluster(t, 1, "real")
	cl := newClient(t, addr)
	for i := range 10 {
		produce(t, cl, &kgo.Record{Topic: "real", Value: fmt.Appendf(nil, "%d", i)})
	}
	// armed: the next fetch at offset 10 is answered out of range;
	// shrunk: list offsets answer an end of 6.
	var armed, shrunk, answered atomic.Bool
	hook := &resetBuffered{after: &answered, at: 6, buffered: make(chan struct{})}
	c.ControlKey(int16(kmsg.Fetch), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kr.(*kmsg.FetchRequest)
		if !armed.Load() || len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].FetchOffset != 10 {
			return nil, nil, false
		}
		armed.Store(false)
		shrunk.Store(true)
		answered.Store(true)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = req.Topics[0].Topic, req.Topics[0].TopicID
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition, rp.ErrorCode = 0, kerr.OffsetOutOfRange.Code
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = 6, 6, 0
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
	c.ControlKey(int16(kmsg.ListOffsets), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !shrunk.Load() {
			return nil, nil, false
		}
		req := kr.(*kmsg.ListOffsetsRequest)
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition, rp.Timestamp, rp.LeaderEpoch = p.Partition, -1, -1
				if p.Timestamp == -1 {
					rp.Offset = 6
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	ctx := context.Background()
	opts := append([]kgo.Opt{kgo.AutoCommitInterval(time.Hour), kgo.DisableFetchSessions(), kgo.WithHooks(hook)}, groupOpts...)
	g, err := NewGroupSubscriber(ctx, Config{Brokers: []string{addr}, Topic: "real", Group: "g", Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	stream := messages(receiveUntil(t, g, untilMessages(10)))[0].Stream
	if err := g.Ack(ctx, stream, 5); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	if samePoll {
		wait(t, hook.buffered, "the record at the reset point buffered")
	}
	rctx, cancel := context.WithTimeout(ctx, testDeadline)
	defer cancel()
	var loss *kgo.ErrDataLoss
	var got []int64
	for loss == nil || int64(len(got)) < 10-loss.ResetTo {
		ev, err := g.Receive(rctx)
		switch {
		case loss == nil && errors.As(err, &loss):
			t.Logf("Receive: %v", err)
			shrunk.Store(false)
			continue
		case err != nil:
			t.Fatalf("Receive after %d messages since the loss: %v", len(got), err)
		case loss == nil:
			t.Fatalf("event %v before the loss was reported", ev.Kind)
		case ev.Kind == transport.EventMessage:
			got = append(got, int64(ev.Message.Seq))
		}
	}
	for i, off := range got {
		if off != loss.ResetTo+int64(i) {
			t.Fatalf("after a loss reset to %d, delivered offsets %v: not every record the broker holds from the reset point on", loss.ResetTo, got)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if c := committed(t, addr, "g", "real", stream.Partition); c != loss.ResetTo {
		t.Fatalf("committed %d after the loss reset to %d", c, loss.ResetTo)
	}
}
