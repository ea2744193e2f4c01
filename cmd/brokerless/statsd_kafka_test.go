package main

import (
	"context"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStatsdKafka: statsd --kafka logd://…/metrics writes each flush to
// the topic, one JSON line a metric keyed by the metric's key, which a
// plain Kafka client reads back.
func TestStatsdKafka(t *testing.T) {
	addr := startTestLogd(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := "logd://" + addr + "/metrics"
	_, errOut, done := startStatsd(t, ctx, "--tcp", "127.0.0.1:0", "--udp", "127.0.0.1:0", "--flush-interval", "50ms", "--kafka", url)
	if !strings.Contains(errOut.String(), "to kafka "+url) {
		t.Fatalf("listening lines:\n%s", errOut)
	}
	m := regexp.MustCompile(`tcp (127\.0\.0\.1:\d+)`).FindStringSubmatch(errOut.String())
	if m == nil {
		t.Fatalf("listening lines:\n%s", errOut)
	}
	c, err := net.Dial("tcp", m[1])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("cli.hits:5|c|#env:prod\ncli.temp:7|g\n")); err != nil {
		t.Fatal(err)
	}
	c.Close()

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("metrics"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	want := map[string]*regexp.Regexp{
		"cli.hits;env=prod": regexp.MustCompile(`^\{"ts":\d+,"type":"counter","key":"cli\.hits;env=prod","values":\{"count":5,"rate":100\}\}$`),
		"cli.temp":          regexp.MustCompile(`^\{"ts":\d+,"type":"gauge","key":"cli\.temp","values":\{"value":7\}\}$`),
	}
	for len(want) > 0 {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			t.Fatalf("not read back: %v", want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if re, ok := want[string(r.Key)]; ok && re.Match(r.Value) {
				delete(want, string(r.Key))
			}
		})
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("statsd: %v\n%s", err, errOut)
	}
}
