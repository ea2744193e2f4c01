package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// TestPipeLooksBackInTO: `brokerless pipe logd://A/src?group=g
// logd://B/dst`, where B's dst already holds what an earlier pipe wrote
// of src — partition 1's 100 records, then 2,000 of partition 0's, so
// that the last 1024 records of dst (what the pipe reads on start) hold
// partition 0 alone — and the group never committed (the earlier pipe
// was killed within its first 5 s). The pipe reads dst further back,
// finds partition 1, and writes each record of src once.
func TestPipeLooksBackInTO(t *testing.T) {
	srcAddr, _ := startKillLogd(t, "--partitions", "2")
	dstAddr, _ := startKillLogd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srcCl, err := kgo.NewClient(kgo.SeedBrokers(srcAddr), kgo.AllowAutoTopicCreation(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer srcCl.Close()
	dstCl, err := kgo.NewClient(kgo.SeedBrokers(dstAddr), kgo.AllowAutoTopicCreation(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer dstCl.Close()
	counts := map[int32]int{0: 3000, 1: 100}
	var src []*kgo.Record
	for p, n := range counts {
		for i := range n {
			src = append(src, &kgo.Record{Topic: "src", Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)})
		}
	}
	if err := srcCl.ProduceSync(ctx, src...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var held []*kgo.Record
	for _, w := range []struct {
		part int32
		n    int
	}{{1, 100}, {0, 2000}} {
		for i := range w.n {
			o := transport.Origin{Stream: transport.StreamID{Topic: "src", Partition: w.part}, Seq: uint64(i), Time: time.Now()}
			r := &kgo.Record{Topic: "dst", Value: fmt.Appendf(nil, "%d-%d", w.part, i)}
			for _, h := range transport.AppendOrigin(nil, o) {
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
			}
			held = append(held, r)
		}
	}
	if err := dstCl.ProduceSync(ctx, held...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	p := startChild(t, "piping ", "pipe", fmt.Sprintf("logd://%s/src?group=g", srcAddr), fmt.Sprintf("logd://%s/dst", dstAddr))
	total := counts[0] + counts[1]
	var dst []transport.Message
	deadline := time.Now().Add(60 * time.Second)
	for dst = readAll(t, dstAddr, "dst"); len(dst) < total && time.Now().Before(deadline); dst = readAll(t, dstAddr, "dst") {
		time.Sleep(100 * time.Millisecond) // polling logd: no event to wait on
	}
	time.Sleep(500 * time.Millisecond) // what a wrong pipe would write twice has time to land
	p.stop(t)
	dst = readAll(t, dstAddr, "dst")
	times := map[string]int{}
	for _, m := range dst {
		o, ok, err := transport.ParseOrigin(m.Headers)
		if !ok || err != nil {
			t.Fatalf("dst offset %d: no origin: %v", m.Seq, err)
		}
		times[fmt.Sprintf("%d-%d", o.Stream.Partition, o.Seq)]++
	}
	for part, n := range counts {
		for i := range n {
			if k := fmt.Sprintf("%d-%d", part, i); times[k] != 1 {
				t.Errorf("src partition %d offset %d is in dst %d times", part, i, times[k])
			}
		}
	}
	if len(dst) != total {
		t.Errorf("dst holds %d records, want %d", len(dst), total)
	}
	if !strings.Contains(p.stderr.String(), "further back than its last 1024, for source streams they did not hold; found 1 there") {
		t.Errorf("no word of the look back:\n%s", p.stderr)
	}
}
