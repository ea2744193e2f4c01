package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/kafka"
)

// TestPipeKillLogdToLogd: `brokerless pipe logd://A/src?group=g
// logd://B/dst`, in a child process, copies a topic of 3 partitions
// whose records have keys and headers, beside a producer writing to it,
// and is SIGKILLed and restarted several times. Afterwards every record
// of the source is in the destination exactly once — no loss, and no
// duplicate of what the killed pipe had written but not yet
// acknowledged to its group — with its key, headers and payload, and
// its origin (partition and offset) in brokerless.origin.
func TestPipeKillLogdToLogd(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a logd-to-logd pipe 6 times, each restart joining its group again: about 50 s")
	}
	const (
		kills = 6
		parts = 3
	)
	srcAddr, _ := startKillLogd(t, "--partitions", fmt.Sprint(parts))
	dstAddr, dstMetrics := startKillLogd(t)

	pub, err := kafka.NewPublisher(context.Background(), kafka.Config{Brokers: []string{srcAddr}, Topic: "src"})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	pubCtx, stopPub := context.WithCancel(context.Background())
	defer stopPub()
	published := make(chan int, 1)
	go func() {
		n := 0
		defer func() { published <- n }()
		for pubCtx.Err() == nil {
			m := transport.Message{
				Key:     fmt.Appendf(nil, "k%d", n%17),
				Headers: []transport.Header{{Key: "h", Value: fmt.Appendf(nil, "v%d", n)}},
				Payload: fmt.Appendf(nil, "payload %d", n),
			}
			if err := pub.Publish(pubCtx, m); err != nil {
				return
			}
			n++
			if n%20 == 0 {
				time.Sleep(time.Millisecond) // at most 20,000 a second: the feed's pace, not a wait
			}
		}
	}()

	from := fmt.Sprintf("logd://%s/src?group=g", srcAddr)
	to := fmt.Sprintf("logd://%s/dst", dstAddr)
	args := []string{"pipe", from, to, "--max-in-flight", "4096"}
	rng := rand.New(rand.NewPCG(3, 4))
	var runs []string // each killed pipe's stderr, shown if the test fails
	for range kills {
		p := startChild(t, "piping ", args...)
		time.Sleep(time.Duration(100+rng.IntN(300)) * time.Millisecond) // run a while: the producer's timing
		p.kill(t)
		runs = append(runs, p.stderr.String())
		waitConnsClosed(t, dstMetrics)
	}
	defer func() {
		if t.Failed() {
			for i, r := range runs {
				t.Logf("killed pipe %d said:\n%s", i+1, r)
			}
		}
	}()
	last := startChild(t, "piping ", args...)
	stopPub()
	n := <-published
	if err := pub.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	src := readAll(t, srcAddr, "src")
	if len(src) != n {
		t.Fatalf("the source holds %d records, %d published", len(src), n)
	}
	type pos struct {
		part   int32
		offset uint64
	}
	want := map[pos]transport.Message{}
	for _, m := range src {
		want[pos{m.Stream.Partition, m.Seq}] = m
	}
	// The last pipe has copied everything once the destination holds
	// every source position.
	covered := func(dst []transport.Message) bool {
		seen := map[pos]bool{}
		for _, m := range dst {
			if o, ok, _ := transport.ParseOrigin(m.Headers); ok {
				seen[pos{o.Stream.Partition, o.Seq}] = true
			}
		}
		return len(seen) == len(want)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !covered(readAll(t, dstAddr, "dst")) {
		if time.Now().After(deadline) {
			t.Errorf("the destination does not hold every source record after 60s")
			break
		}
		time.Sleep(100 * time.Millisecond) // polling logd: no event to wait on
	}
	last.stop(t)

	dst := readAll(t, dstAddr, "dst")
	times := map[pos]int{}
	dups := 0
	for _, m := range dst {
		o, ok, err := transport.ParseOrigin(m.Headers)
		if !ok || err != nil {
			t.Fatalf("destination offset %d: no origin: %v", m.Seq, err)
		}
		p := pos{o.Stream.Partition, o.Seq}
		if times[p]++; times[p] == 2 {
			dups++
			if dups <= 3 {
				t.Errorf("source partition %d offset %d is in the destination twice", p.part, p.offset)
			}
		}
		s, ok := want[p]
		switch {
		case !ok:
			t.Errorf("destination offset %d: origin %v is no source record", m.Seq, o)
		case string(m.Key) != string(s.Key) || string(m.Payload) != string(s.Payload) ||
			len(m.Headers) != 2 || m.Headers[0].Key != "h" || string(m.Headers[0].Value) != string(s.Headers[0].Value):
			t.Errorf("destination offset %d: key %q headers %v payload %q, want %q %v %q", m.Seq, m.Key, m.Headers, m.Payload, s.Key, s.Headers, s.Payload)
		}
	}
	missing := 0
	for p := range want {
		if times[p] == 0 {
			missing++
		}
	}
	if dups > 0 || missing > 0 {
		t.Errorf("of %d source records, %d written twice or more, %d missing", len(src), dups, missing)
	}
	t.Logf("%d records in %d partitions; the last pipe's summary: %s", len(src), parts, lastLine(last.stderr.String()))
}

// readAll reads every record of a logd topic.
func readAll(t *testing.T, addr, topic string) []transport.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ms, err := kafka.Tail(ctx, kafka.Config{Brokers: []string{addr}, Topic: topic}, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}
