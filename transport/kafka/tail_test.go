package kafka

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/logd"
	"github.com/brokerless/brokerless/logd/storage"
	"github.com/brokerless/brokerless/transport"
)

// TestTail: a logd:// endpoint is a TailReader that returns the last n
// records of every partition, oldest first, with their headers.
func TestTail(t *testing.T) {
	srv, err := logd.New(logd.Config{Storage: storage.Config{Dir: t.TempDir()}, DefaultPartitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	addr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	ep, err := transport.Open(ctx, "logd://"+addr+"/tail")
	if err != nil {
		t.Fatal(err)
	}
	tr, ok := ep.(transport.TailReader)
	if !ok {
		t.Fatalf("%T is not a TailReader", ep)
	}
	if tail, err := tr.Tail(ctx, 4); err != nil || len(tail) != 0 {
		t.Fatalf("a topic that does not exist: %d records, %v", len(tail), err)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for p, n := range []int{10, 3} {
		for i := range n {
			r := &kgo.Record{Topic: "tail", Partition: int32(p), Value: fmt.Appendf(nil, "%d-%d", p, i),
				Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	tail, err := tr.Tail(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range tail {
		if len(m.Headers) != 1 || m.Headers[0].Key != "h" || string(m.Headers[0].Value) != "v" || m.Stream.Topic != "tail" || m.Payload != nil {
			t.Errorf("record %+v: want its header alone", m)
		}
		got = append(got, fmt.Sprintf("%d@%d", m.Stream.Partition, m.Seq))
	}
	// Partitions in any order, each oldest first.
	want := map[int32]string{0: "0@6 0@7 0@8 0@9", 1: "1@0 1@1 1@2"}
	joined := strings.Join(got, " ")
	for p, w := range want {
		if !strings.Contains(joined, w) {
			t.Errorf("partition %d: tail %q lacks %q", p, joined, w)
		}
	}
	if len(tail) != 7 {
		t.Errorf("%d records, want 7: %q", len(tail), joined)
	}
	if _, err := tr.Tail(ctx, 0); err == nil {
		t.Error("a tail of 0 records")
	}
	// The function keeps keys and payloads.
	full, err := Tail(ctx, Config{Brokers: []string{addr}, Topic: "tail"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range full {
		if want := fmt.Sprintf("%d-%d", m.Stream.Partition, m.Seq); string(m.Payload) != want || len(m.Headers) != 1 {
			t.Errorf("kafka.Tail: %+v, want payload %q", m, want)
		}
	}

	// Further back, a page at a time (transport.BackReader), headers
	// alone.
	br, ok := ep.(transport.BackReader)
	if !ok {
		t.Fatalf("%T is not a BackReader", ep)
	}
	p0 := transport.StreamID{Topic: "tail", Partition: 0}
	for _, c := range []struct {
		stream transport.StreamID
		before uint64
		n      int
		want   string
	}{
		{p0, 6, 4, "0@2 0@3 0@4 0@5"},
		{p0, 2, 4, "0@0 0@1"},
		{p0, 0, 4, ""},
		{p0, 100, 2, "0@8 0@9"}, // past the end: the last records
		{transport.StreamID{Topic: "tail", Partition: 1}, 3, 1, "1@2"},
	} {
		page, err := br.Before(ctx, c.stream, c.before, c.n)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range page {
			if m.Stream != c.stream || len(m.Headers) != 1 || string(m.Headers[0].Value) != "v" || m.Payload != nil || m.Key != nil {
				t.Errorf("record %+v: want its header alone", m)
			}
			got = append(got, fmt.Sprintf("%d@%d", m.Stream.Partition, m.Seq))
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("%d records of %v before %d: %q, want %q", c.n, c.stream, c.before, g, c.want)
		}
	}
	if _, err := br.Before(ctx, p0, 5, 0); err == nil {
		t.Error("a page of 0 records")
	}
}

// TestBeforeCompacted: in a compacted partition a stretch of n offsets
// holds fewer than n records; Before reads further back until it has n
// (or the start), the same records a read from the start shows last
// before the position. So does the endpoint's Tail (a pipe takes a tail
// of fewer than DefaultTailRecords records of a destination stream for
// all it holds, and would not look further back).
func TestBeforeCompacted(t *testing.T) {
	addr := startLogd(t, func(c *logd.Config) { c.Storage.MaintenanceInterval = 20 * time.Millisecond })
	createTopic(t, addr, "kv", 1, "cleanup.policy", "compact", "segment.bytes", "1024")
	cl := newClient(t, addr, kgo.DefaultProduceTopic("kv"))
	const updates = 600
	for i := range updates {
		key := []byte("same") // every third record has a key of its own, the rest one key: compaction keeps a third
		if i%3 == 0 {
			key = fmt.Appendf(nil, "k%d", i)
		}
		produce(t, cl, &kgo.Record{Key: key, Value: fmt.Appendf(nil, "v%d", i)}) // a batch each: many segments
	}
	cfg := Config{Brokers: []string{addr}, Topic: "kv"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offsets := func(ms []transport.Message) []uint64 {
		var o []uint64
		for _, m := range ms {
			o = append(o, m.Seq)
		}
		return o
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		all, err := Tail(ctx, cfg, updates)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) > updates/2 {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d records after 20s: not compacted", len(all), updates)
			}
			time.Sleep(50 * time.Millisecond) // compaction runs in the background: no event to wait on
			continue
		}
		const n = 40
		page, err := Before(ctx, cfg, 0, updates-1, n)
		if err != nil {
			t.Fatal(err)
		}
		last, err := NewEndpoint(cfg).(transport.TailReader).Tail(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Tail(ctx, cfg, updates)
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != len(all) {
			all = again // compacted meanwhile: again
			continue
		}
		var want []uint64
		for _, o := range offsets(all) {
			if o < updates-1 {
				want = append(want, o)
			}
		}
		want = want[max(0, len(want)-n):]
		if got := offsets(page); !slices.Equal(got, want) {
			t.Fatalf("%d records before offset %d: %v, want %v (of %d left by compaction)", n, updates-1, got, want, len(all))
		}
		if got, want := offsets(last), offsets(all[len(all)-n:]); !slices.Equal(got, want) {
			t.Fatalf("a tail of %d records: %v, want %v (of %d left by compaction)", n, got, want, len(all))
		}
		t.Logf("compaction left %d of %d records; the %d before offset %d span offsets %d..%d", len(all), updates, n, updates-1, want[0], want[len(want)-1])
		return
	}
}
