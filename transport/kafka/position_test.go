package kafka

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/transport"
)

// TestFromOffsetPastEndStartsAtEnd: as AtOffset says, a subscriber
// asked to start past the end of a partition (a saved offset of a log
// since recreated) starts at the end: it delivers what is published
// after it started, and none of the records before (the client, left
// to itself, reset to the log's start and replayed them all); it logs
// where the partition started.
func TestFromOffsetPastEndStartsAtEnd(t *testing.T) {
	addr := startLogd(t)
	createTopic(t, addr, "past", 1)
	cl := newClient(t, addr, kgo.DefaultProduceTopic("past"))
	for i := range 10 {
		produce(t, cl, &kgo.Record{Value: fmt.Appendf(nil, "old-%d", i)})
	}
	var logged syncBuffer
	cfg := parse(t, "logd://"+addr+"/past?from=1000")
	cfg.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	sub, err := NewSubscriber(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	ev, err := sub.Receive(ctx)
	cancel()
	if err == nil && ev.Kind == transport.EventMessage {
		t.Fatalf("before anything new was published: message %d %q", ev.Message.Seq, ev.Message.Payload)
	}
	produce(t, cl, &kgo.Record{Value: []byte("new")})
	evs := receiveUntil(t, sub, untilMessages(1))
	t.Logf("events: %s", describe(evs))
	if ms := messages(evs); string(ms[0].Payload) != "new" || ms[0].Seq != 10 {
		t.Fatalf("first message %d %q, want 10 \"new\"", ms[0].Seq, ms[0].Payload)
	}
	if log := logged.String(); !strings.Contains(log, "past the partition's end") || !strings.Contains(log, "stream=past/0 asked=1000 first=10") {
		t.Errorf("want a warning that partition 0 starts at 10, below 1000; logged:\n%s", log)
	}
}

// TestGroupFromOffsetPastEndStartsAtEnd: a group member asked to start
// past the end starts a partition its group committed nothing for at
// the partition's end, as a Subscriber does, and says so in its log;
// where the group committed an offset, the commit wins (from= is only
// where a partition without one starts).
func TestGroupFromOffsetPastEndStartsAtEnd(t *testing.T) {
	addr := startLogd(t, fastGroups)
	createTopic(t, addr, "gpast", 2)
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 10 {
		for p := range int32(2) {
			produce(t, cl, &kgo.Record{Topic: "gpast", Partition: p, Value: fmt.Appendf(nil, "old-%d", i)})
		}
	}
	commitStandalone(t, cl, "g", "gpast", 1, 3)

	var logged syncBuffer
	cfg := parse(t, "logd://"+addr+"/gpast?from=1000&group=g")
	cfg.Options, cfg.Logger = groupOpts, slog.New(slog.NewTextHandler(&logged, nil))
	sub, err := NewGroupSubscriber(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// Partition 1 resumes at its commit: 3..9. Once they are in, the
	// member has its partitions and where each starts.
	evs := receiveUntil(t, sub, untilMessages(7))
	produce(t, cl, &kgo.Record{Topic: "gpast", Partition: 0, Value: []byte("new")})
	evs = append(evs, receiveUntil(t, sub, untilMessages(1))...)
	t.Logf("events: %s", describe(evs))
	got := map[int32][]string{}
	for _, m := range messages(evs) {
		got[m.Stream.Partition] = append(got[m.Stream.Partition], fmt.Sprintf("%d:%s", m.Seq, m.Payload))
	}
	if want := "[10:new]"; fmt.Sprint(got[0]) != want {
		t.Errorf("partition 0 (no commit): %v, want %s", got[0], want)
	}
	if want := "[3:old-3 4:old-4 5:old-5 6:old-6 7:old-7 8:old-8 9:old-9]"; fmt.Sprint(got[1]) != want {
		t.Errorf("partition 1 (committed 3): %v, want %s", got[1], want)
	}
	for _, ev := range evs {
		if ev.Kind == transport.EventGap {
			t.Errorf("gap %v", ev.Gap)
		}
	}
	log := logged.String()
	if !strings.Contains(log, "past the partition's end") || !strings.Contains(log, "stream=gpast/0 asked=1000 first=10") || strings.Contains(log, "gpast/1") {
		t.Errorf("want one warning, of partition 0 starting at its end; logged:\n%s", log)
	}
}

// commitStandalone commits offset for group's partition p of topic,
// outside any group session (generation -1), as an admin tool does.
func commitStandalone(t testing.TB, cl *kgo.Client, group, topic string, p int32, offset int64) {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = p, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger's goroutines and the
// test's.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestCommitWinsOverFrom: a partition its group committed an offset for
// is expected there, not at From, even where From is further: a
// commit below the log start is then reported as a Gap up to the first
// record, and nothing is logged (the member did not start below where
// it was to).
func TestCommitWinsOverFrom(t *testing.T) {
	var logged syncBuffer
	g := &GroupSubscriber{Subscriber: newSubscriber(Config{Topic: "t", Group: "g", From: AtOffset(1000),
		Logger: slog.New(slog.NewTextHandler(&logged, nil))})}
	g.assigned(context.Background(), nil, map[string][]int32{"t": {0}})
	resp := kmsg.NewPtrOffsetFetchResponse()
	rt := kmsg.NewOffsetFetchResponseTopic()
	rt.Topic = "t"
	rp := kmsg.NewOffsetFetchResponseTopicPartition()
	rp.Partition, rp.Offset = 0, 3
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	if err := g.offsetsFetched(context.Background(), nil, resp); err != nil {
		t.Fatal(err)
	}
	g.emit(queued{r: &kgo.Record{Topic: "t", Offset: 50}, logStart: 50})
	checkStartGap(t, g.pending, 3, 50, transport.GapRetention)
	if log := logged.String(); log != "" {
		t.Errorf("logged:\n%s", log)
	}
}
