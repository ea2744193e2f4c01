package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd"
	"github.com/brokerless/brokerless/transport"
)

// TestSkippedReasons: offsets below the log start are retention's; a
// hole above it is compaction's where the topic compacts, and loss
// otherwise.
func TestSkippedReasons(t *testing.T) {
	id := transport.StreamID{Topic: "t"}
	const (
		ret  = transport.GapRetention
		comp = transport.GapCompacted
	)
	type g struct {
		from, to uint64
		r        transport.GapReason
	}
	for _, tc := range []struct {
		name               string
		policy             string
		from, to, logStart int64
		want               []g
	}{
		{"retention", "delete", 0, 9, 10, []g{{0, 9, ret}}},
		{"start past the record", "delete", 0, 9, 20, []g{{0, 9, ret}}},
		{"hole in a delete topic", "delete", 5, 9, 0, []g{{5, 9, ret}}},
		{"compacted", "compact", 5, 9, 0, []g{{5, 9, comp}}},
		{"both", "compact,delete", 0, 9, 4, []g{{0, 3, ret}, {4, 9, comp}}},
		{"compacted, start unknown", "compact", 5, 9, -1, []g{{5, 9, comp}}},
		{"compact,delete, start unknown", "compact,delete", 5, 9, -1, []g{{5, 9, ret}}},
		{"policy unknown", "", 5, 9, 0, []g{{5, 9, ret}}},
	} {
		s := newSubscriber(Config{Topic: "t"})
		s.policy = parsePolicy(tc.policy)
		var got []g
		for _, gap := range s.skipped(id, tc.from, tc.to, tc.logStart) {
			got = append(got, g{gap.From, gap.To, gap.Reason})
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// retentionLogd keeps about two 1 KiB segments per partition, applying
// retention every 10 ms.
func retentionLogd(c *logd.Config) {
	c.Storage.SegmentBytes = 1024
	c.Storage.RetentionBytes = 2048
	c.Storage.MaintenanceInterval = 10 * time.Millisecond
	fastGroups(c)
}

// TestGapRetention: a subscriber asked to start at an offset retention
// deleted, and a group member resuming from a commit retention passed,
// both get a Gap (GapRetention, lost) up to the log start, then the
// records.
func TestGapRetention(t *testing.T) {
	addr := startLogd(t, retentionLogd)
	createTopic(t, addr, "old", 1)
	cl := newClient(t, addr)
	ctx := context.Background()
	value := make([]byte, 100)
	produce(t, cl, &kgo.Record{Topic: "old", Value: value})
	group := Config{Brokers: []string{addr}, Topic: "old", Group: "g", Options: groupOpts}
	a, err := NewGroupSubscriber(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	m := messages(receiveUntil(t, a, untilMessages(1)))[0]
	if err := a.Ack(ctx, m.Stream, m.Seq); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil { // commits 1
		t.Fatal(err)
	}
	for range 100 {
		produce(t, cl, &kgo.Record{Topic: "old", Value: value})
	}
	start := waitLogStart(t, cl, "old", 2)

	sub, err := NewSubscriber(ctx, Config{Brokers: []string{addr}, Topic: "old", From: AtOffset(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	checkStartGap(t, receiveUntil(t, sub, untilMessages(1)), 0, start, transport.GapRetention)

	b, err := NewGroupSubscriber(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	checkStartGap(t, receiveUntil(t, b, untilMessages(1)), 1, start, transport.GapRetention)
}

// checkStartGap checks that evs begin with a stream-start at from, a gap
// of reason from up to the first message, and that message, at least at
// start: retention may have gone on deleting since the log started
// there.
func checkStartGap(t *testing.T, evs []transport.Event, from, start int64, reason transport.GapReason) {
	t.Helper()
	if len(evs) != 3 ||
		evs[0].Kind != transport.EventStreamStart || evs[0].Start.FirstSeq != uint64(from) ||
		evs[1].Kind != transport.EventGap || evs[1].Gap.From != uint64(from) || evs[1].Gap.Reason != reason ||
		evs[2].Kind != transport.EventMessage || evs[2].Message.Seq < uint64(start) || evs[1].Gap.To != evs[2].Message.Seq-1 {
		t.Fatalf("want stream-start at %d, gap %d..N-1 (%s), message N >= %d; got %s", from, from, reason, start, describe(evs))
	}
	if !evs[1].Gap.Lost() {
		t.Errorf("%v: not lost", evs[1].Gap)
	}
}

func describe(evs []transport.Event) string {
	var s string
	for _, ev := range evs {
		switch ev.Kind {
		case transport.EventStreamStart:
			s += fmt.Sprintf("[start %s at %d] ", ev.Start.Stream, ev.Start.FirstSeq)
		case transport.EventGap:
			s += fmt.Sprintf("[%v] ", ev.Gap)
		case transport.EventMessage:
			s += fmt.Sprintf("[message %s@%d] ", ev.Message.Stream, ev.Message.Seq)
		default:
			s += fmt.Sprintf("[%v] ", ev.Kind)
		}
	}
	return s
}

// waitLogStart waits until partition 0 of topic starts at least at
// least, and returns where it starts.
func waitLogStart(t *testing.T, cl *kgo.Client, topic string, least int64) int64 {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(testDeadline)
	for {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -2 // earliest
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatal(err)
		}
		if start := resp.Topics[0].Partitions[0].Offset; start >= least {
			return start
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s still starts below %d after %v", topic, least, testDeadline)
		}
	}
}

// TestGapCompacted: offsets compaction removed from a compacted topic are
// Gaps of reason GapCompacted, not lost; with the messages they cover
// every offset, and the latest value of every key is delivered.
func TestGapCompacted(t *testing.T) {
	addr := startLogd(t, func(c *logd.Config) { c.Storage.MaintenanceInterval = 10 * time.Millisecond })
	createTopic(t, addr, "kv", 1, "cleanup.policy", "compact", "segment.bytes", "1024")
	cl := newClient(t, addr)
	const updates, keys = 300, 3
	for i := range updates {
		produce(t, cl, &kgo.Record{Topic: "kv", Key: fmt.Appendf(nil, "k%d", i%keys), Value: fmt.Appendf(nil, "v%d", i)})
	}
	waitCompacted(t, addr, "kv", updates)

	sub, err := NewSubscriber(context.Background(), Config{Brokers: []string{addr}, Topic: "kv"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	evs := receiveUntil(t, sub, func(evs []transport.Event) bool {
		ms := messages(evs)
		return len(ms) > 0 && ms[len(ms)-1].Seq == updates-1
	})
	var next uint64
	gaps, latest := 0, map[string]string{}
	for _, ev := range evs {
		switch ev.Kind {
		case transport.EventGap:
			if ev.Gap.Reason != transport.GapCompacted || ev.Gap.Lost() || ev.Gap.From != next {
				t.Fatalf("%v after offset %d", ev.Gap, next)
			}
			gaps++
			next = ev.Gap.To + 1
		case transport.EventMessage:
			if ev.Message.Seq != next {
				t.Fatalf("message at %d, want %d: %s", ev.Message.Seq, next, describe(evs))
			}
			latest[string(ev.Message.Key)] = string(ev.Message.Payload)
			next++
		}
	}
	if gaps == 0 {
		t.Fatal("no gap in a compacted topic")
	}
	for k := range keys {
		if v, want := latest[fmt.Sprint("k", k)], fmt.Sprint("v", updates-keys+k); v != want {
			t.Errorf("k%d: latest %q, want %q", k, v, want)
		}
	}
}

// waitCompacted waits until fewer than n records of topic are left.
func waitCompacted(t *testing.T, addr, topic string, n int) {
	t.Helper()
	deadline := time.Now().Add(testDeadline)
	for time.Now().Before(deadline) {
		cl := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
		var last int64 = -1
		got := 0
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		for last < int64(n-1) && ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { last, got = r.Offset, got+1 })
		}
		cancel()
		cl.Close()
		if got < n {
			return
		}
	}
	t.Fatalf("%s not compacted in %v", topic, testDeadline)
}

// TestGapMarkerRoundTrip: a gap marker published by a pipe is delivered
// as the Gap it stands for, of its origin stream, and an end marker as
// its StreamEnd; a malformed one is delivered as a message, headers and
// all, and counted.
func TestGapMarkerRoundTrip(t *testing.T) {
	addr := startLogd(t)
	ctx := context.Background()
	cfg := Config{Brokers: []string{addr}, Topic: "piped"}
	pub, err := NewPublisher(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	origin := transport.StreamID{Feed: 7, Session: 0xabc}
	want := transport.Gap{Stream: origin, From: 10, To: 19, Reason: transport.GapSourceDown}
	bad := transport.GapMarker(want, time.Now())
	for i, h := range bad.Headers {
		if h.Key == transport.HeaderOrigin {
			bad.Headers[i].Value = h.Value[:20] // cut short
		}
	}
	end := transport.StreamEnd{Stream: origin, LastSeq: 30, Reason: transport.EndClosed}
	for _, m := range []transport.Message{
		transport.GapMarker(want, time.Now()),
		{Payload: []byte("after")},
		bad,
		transport.EndMarker(end, time.Now()),
		{Payload: []byte("last")},
	} {
		if err := pub.Publish(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sub, err := NewSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	evs := receiveUntil(t, sub, untilMessages(3))
	if len(evs) != 6 || evs[1].Kind != transport.EventGap || evs[1].Gap != want ||
		evs[2].Kind != transport.EventMessage || string(evs[2].Message.Payload) != "after" ||
		evs[3].Kind != transport.EventMessage || evs[3].Message.Seq != 2 || len(evs[3].Message.Headers) != len(bad.Headers) ||
		evs[4].Kind != transport.EventStreamEnd || evs[4].End != end ||
		evs[5].Kind != transport.EventMessage || string(evs[5].Message.Payload) != "last" {
		t.Fatalf("want start, %v, message, malformed marker, %v, message; got %s", want, end, describe(evs))
	}
	if n := sub.Stats().MalformedMarkers; n != 1 {
		t.Errorf("MalformedMarkers %d, want 1", n)
	}
}

// TestTakeFetches: records are queued even when their fetch carries an
// error, which is returned after; a group session the client joins
// again is counted, not returned; a broker that lost records moves the
// expected offset back to where the client resumed.
func TestTakeFetches(t *testing.T) {
	s := newSubscriber(Config{Topic: "t"})
	s.part(0).next = 50
	rec := &kgo.Record{Topic: "t", Partition: 1, Offset: 7}
	err := s.take(kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: "t", Partitions: []kgo.FetchPartition{
		{Partition: 1, Records: []*kgo.Record{rec}, LogStartOffset: 3, Err: kerr.TopicAuthorizationFailed},
		{Partition: 0, Err: &kgo.ErrDataLoss{Topic: "t", Partition: 0, ConsumedTo: 50, ResetTo: 40}},
	}}, {Topic: "", Partitions: []kgo.FetchPartition{{Err: &kgo.ErrGroupSession{Err: kerr.UnknownMemberID}}}}}}})
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("take returned %v, want the authorization error", err)
	}
	if len(s.queue) != 1 || s.queue[0].r != rec || s.queue[0].logStart != 3 {
		t.Errorf("queued %v", s.queue)
	}
	if s.parts[0].next != 40 {
		t.Errorf("after data loss partition 0 expects %d, want 40", s.parts[0].next)
	}
	if s.stats.Rejoins != 1 {
		t.Errorf("Rejoins %d, want 1", s.stats.Rejoins)
	}
}

// TestMalformedMarkersLogBounded: a stream of records whose origin header
// this reader cannot decode (a later layout version, say) logs a warning
// at the 1st, 2nd, 4th, 8th… record, not one a record, and counts all.
func TestMalformedMarkersLogBounded(t *testing.T) {
	var logged bytes.Buffer
	s := newSubscriber(Config{Topic: "t", Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	future := []byte{transport.OriginVersion + 1, 0}
	const n = 1000
	for i := range n {
		rec := &kgo.Record{Topic: "t", Offset: int64(i), Value: []byte("x"),
			Headers: []kgo.RecordHeader{{Key: transport.HeaderOrigin, Value: future}}}
		s.emit(queued{r: rec})
	}
	if got := s.Stats().MalformedMarkers; got != n {
		t.Errorf("MalformedMarkers %d, want %d", got, n)
	}
	if lines := strings.Count(logged.String(), "\n"); lines != 10 { // 1, 2, 4, … 512
		t.Errorf("%d warnings logged for %d malformed records, want 10:\n%s", lines, n, logged.String())
	}
}

// flakyRequester fails the first requests with the errors of fail, in
// turn, and hands the others to next, counting them all.
type flakyRequester struct {
	next  requester
	fail  []error
	calls int
}

func (f *flakyRequester) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	f.calls++
	if f.calls <= len(f.fail) {
		return nil, f.fail[f.calls-1]
	}
	return f.next.Request(ctx, req)
}

// compactedWithHoles creates a compacted topic whose log, once
// compacted, has several holes: rounds of updates of three keys, each
// followed by a record of a key of its own, which compaction keeps. It
// returns the last offset.
func compactedWithHoles(t *testing.T, addr, topic string) int64 {
	t.Helper()
	createTopic(t, addr, topic, 1, "cleanup.policy", "compact", "segment.bytes", "1024")
	cl := newClient(t, addr)
	const rounds, updates = 5, 60
	for r := range rounds {
		for i := range updates {
			produce(t, cl, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i%3), Value: fmt.Appendf(nil, "v%d", i)})
		}
		produce(t, cl, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "u%d", r), Value: []byte("kept")})
	}
	n := rounds * (updates + 1)
	waitCompacted(t, addr, topic, n)
	return int64(n - 1)
}

// untilGaps stops receiveUntil after n more gaps than evs had.
func untilGaps(n int) func([]transport.Event) bool {
	return func(evs []transport.Event) bool {
		got := 0
		for _, ev := range evs {
			if ev.Kind == transport.EventGap {
				got++
			}
		}
		return got >= n
	}
}

// gapReasons lists the reasons of the gaps of evs.
func gapReasons(evs []transport.Event) []transport.GapReason {
	var rs []transport.GapReason
	for _, ev := range evs {
		if ev.Kind == transport.EventGap {
			rs = append(rs, ev.Gap.Reason)
		}
	}
	return rs
}

// TestPolicyRetriedAfterTransientFailure: a DescribeConfigs that fails in
// a way that may pass (here a connection refused) does not settle the
// cleanup policy: the holes met until it is asked again are reported as
// retention — the safe reading, a false alarm at worst — and it is
// asked again at the first hole once the backoff (on the subscriber's
// clock) has passed, not before; the holes after the answer are
// compaction's. A refusal that asking again would not change (an
// authorization error) settles it: holes are retention, and it is not
// asked again.
func TestPolicyRetriedAfterTransientFailure(t *testing.T) {
	addr := startLogd(t, func(c *logd.Config) { c.Storage.MaintenanceInterval = 10 * time.Millisecond })
	last := compactedWithHoles(t, addr, "kv")
	untilLast := func(evs []transport.Event) bool {
		ms := messages(evs)
		return len(ms) > 0 && ms[len(ms)-1].Seq == uint64(last)
	}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

	t.Run("transient", func(t *testing.T) {
		sub, err := NewSubscriber(context.Background(), Config{Brokers: []string{addr}, Topic: "kv"})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		flaky := &flakyRequester{next: sub.admin, fail: []error{refused}}
		clock := time.Unix(1000, 0)
		sub.admin, sub.now = flaky, func() time.Time { return clock }

		evs := receiveUntil(t, sub, untilGaps(2))
		if rs := gapReasons(evs); fmt.Sprint(rs) != fmt.Sprint([]transport.GapReason{transport.GapRetention, transport.GapRetention}) || flaky.calls != 1 {
			t.Fatalf("before the backoff passed: gaps %v, %d requests; want 2 retention, 1 request: %s", rs, flaky.calls, describe(evs))
		}
		clock = clock.Add(policyRetryMin)
		evs = receiveUntil(t, sub, untilLast)
		rs := gapReasons(evs)
		if len(rs) == 0 || flaky.calls != 2 {
			t.Fatalf("after the backoff: gaps %v, %d requests; want some, 2 requests: %s", rs, flaky.calls, describe(evs))
		}
		for _, r := range rs {
			if r != transport.GapCompacted {
				t.Fatalf("after the policy was learned: gaps %v, want all compacted: %s", rs, describe(evs))
			}
		}
	})

	t.Run("refused", func(t *testing.T) {
		sub, err := NewSubscriber(context.Background(), Config{Brokers: []string{addr}, Topic: "kv"})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		flaky := &flakyRequester{next: sub.admin, fail: []error{kerr.TopicAuthorizationFailed}}
		clock := time.Unix(1000, 0)
		sub.admin, sub.now = flaky, func() time.Time { return clock }
		evs := receiveUntil(t, sub, untilGaps(1))
		clock = clock.Add(policyRetryMax)
		evs = append(evs, receiveUntil(t, sub, untilLast)...)
		rs := gapReasons(evs)
		if len(rs) < 2 || flaky.calls != 1 {
			t.Fatalf("gaps %v, %d requests; want several, 1 request", rs, flaky.calls)
		}
		for _, r := range rs {
			if r != transport.GapRetention {
				t.Fatalf("gaps %v, want all retention: %s", rs, describe(evs))
			}
		}
	})
}

// TestPolicyBackoff: the wait after each failure in a row doubles from
// policyRetryMin up to policyRetryMax, and stays there.
func TestPolicyBackoff(t *testing.T) {
	var got []time.Duration
	for n := 1; n <= 9; n++ {
		got = append(got, policyBackoff(n))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		32 * time.Second, time.Minute, time.Minute, time.Minute}
	if !slices.Equal(got, want) {
		t.Fatalf("backoffs %v, want %v", got, want)
	}
	if d := policyBackoff(1 << 30); d != policyRetryMax {
		t.Fatalf("backoff after very many failures %v, want %v", d, policyRetryMax)
	}
}
