package multicast

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/latency"
)

// archiveBenchEnv reads a positive integer from the environment.
func archiveBenchEnv(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkArchiveCatchUp: how fast does a late joiner catch up from the
// archive, against a plain Kafka consumer reading the same topic? Once, a
// recorder (a pipe into a logd in the process) records n messages of a
// feed (BROKERLESS_CATCHUP_MESSAGES, default 200,000, of
// BROKERLESS_CATCHUP_SIZE bytes, default 64); the publisher then stays
// up, idle. Then, in BROKERLESS_CATCHUP_ROUNDS rounds (default 5), in
// alternating order:
//
//   - the late joiner: a Subscriber with the archive and JoinEarliest,
//     from its creation until it delivered message n, every one of them
//     from the archive, in order, with no gap: rate J;
//   - a plain kgo consumer of the topic, from its creation until it
//     fetched n records: rate K (it decodes no origin and delivers
//     nothing: the floor of what reading the log costs).
//
// Reported as medians, each round logged: joiner/kgo = J/K (the target
// is ≥ 0.8), and both rates.
func BenchmarkArchiveCatchUp(b *testing.B) {
	rounds := archiveBenchEnv("BROKERLESS_CATCHUP_ROUNDS", 5)
	n := archiveBenchEnv("BROKERLESS_CATCHUP_MESSAGES", 200_000)
	size := archiveBenchEnv("BROKERLESS_CATCHUP_SIZE", 64)
	if note := latency.PageReportingNote(); note != "" {
		b.Log(note)
	}
	cfg := testConfig(b)
	addr := startLogd(b)
	raw := startRecorder(b, cfg, addr, "catchup")
	p := mustPub(b, cfg)
	publishAt(b, p, 0, n, size, 100_000)
	waitRecorded(b, raw, uint64(n))
	var joiner, plain, ratios []float64
	for r := range rounds {
		var j, k float64
		if r%2 == 0 {
			j, k = catchUpJoiner(b, cfg, raw, n), catchUpKgo(b, addr, "catchup", n)
		} else {
			k, j = catchUpKgo(b, addr, "catchup", n), catchUpJoiner(b, cfg, raw, n)
		}
		joiner, plain, ratios = append(joiner, j), append(plain, k), append(ratios, j/k)
		b.Logf("round %d, %d recorded messages of %d bytes (one origin header each), one partition, fetches of 1 MiB on both sides: late joiner (Subscriber, archive, JoinEarliest, from its creation to message n, each checked) %.0f msgs/s from the archive; plain kgo consumer (from its creation to record n, counting records) %.0f records/s: %.2f", r+1, n, size, j, k, j/k)
	}
	b.ReportMetric(benchMedian(joiner), "joiner-msgs/s")
	b.ReportMetric(benchMedian(plain), "kgo-msgs/s")
	b.ReportMetric(benchMedian(ratios), "joiner/kgo")
	b.ReportMetric(0, "ns/op")
}

// catchUpJoiner is the rate at which a late joiner delivers the first n
// messages of the feed, all from the archive.
func catchUpJoiner(b *testing.B, cfg Config, raw string, n int) float64 {
	b.Helper()
	scfg := cfg
	scfg.Archive.URL, scfg.Archive.Join = raw, JoinEarliest()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	start := time.Now()
	s, err := NewSubscriber(ctx, scfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	next := uint64(1)
	for next <= uint64(n) {
		ev, err := s.Receive(ctx)
		if err != nil {
			b.Fatalf("message %d of %d: %v", next, n, err)
		}
		switch ev.Kind {
		case transport.EventMessage:
			if ev.Message.Seq != next || indexOf(ev.Message.Payload) != int(next-1) {
				b.Fatalf("message %d (index %d) where %d is due", ev.Message.Seq, indexOf(ev.Message.Payload), next)
			}
			next++
		case transport.EventGap, transport.EventStreamEnd:
			b.Fatalf("%v where message %d is due", ev.Kind, next)
		}
	}
	rate := float64(n) / time.Since(start).Seconds()
	if got := s.Stats().Archive.FromArchive; got < uint64(n) {
		b.Fatalf("%d of the %d messages from the archive", got, n)
	}
	return rate
}

// catchUpKgo is the rate at which a plain kgo consumer fetches the first
// n records of topic.
func catchUpKgo(b *testing.B, addr, topic string, n int) float64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	start := time.Now()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			b.Fatalf("%d of %d records: %v", got, n, err)
		}
		got += fs.NumRecords()
	}
	return float64(n) / time.Since(start).Seconds()
}

func benchMedian(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
