package logd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commitMeta commits offset 1 of the partitions of topic, each with
// meta, for group as a standalone consumer and returns each partition's
// code.
func commitMeta(t *testing.T, cl *kgo.Client, group, topic string, meta string, parts ...int32) []int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for _, p := range parts {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.Metadata = p, 1, &meta
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	var codes []int16
	for _, p := range resp.Topics[0].Partitions {
		codes = append(codes, p.ErrorCode)
	}
	return codes
}

func codesAre(t *testing.T, what string, codes []int16, want *kerr.Error) {
	t.Helper()
	for i, c := range codes {
		if (want == nil && c != 0) || (want != nil && c != want.Code) {
			t.Fatalf("%s: partition %d answered %v, want %v", what, i, kerr.ErrorForCode(c), want)
		}
	}
}

func metricsPage(t *testing.T, s *Server) string {
	t.Helper()
	var b bytes.Buffer
	s.writeMetrics(&b)
	promtoolCheck(t, b.Bytes())
	return b.String()
}

// TestOffsetsByteBudget, through franz-go: commits for partitions that
// do not exist are refused (UNKNOWN_TOPIC_OR_PARTITION), so they cannot
// grow the offsets; a restart with Storage.MaxOffsetBytes lowered below
// what the offsets hold accounts the same bytes, serves them, accepts
// commits that add nothing, and answers those that would add bytes
// INVALID_COMMIT_OFFSET_SIZE, which franz-go reports as
// kerr.InvalidCommitOffsetSize; refusals are counted and logged once;
// expiry makes room again.
func TestOffsetsByteBudget(t *testing.T) {
	clk := &storageClock{}
	clk.ms.Store(time.Now().UnixMilli())
	var logs lockedBuffer
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		c.WarnLogGap = time.Hour
		c.Storage.Now = clk.now
		c.Storage.OffsetsRetention = time.Hour
		c.Storage.MaintenanceInterval = -1
	})
	admin := newClient(t, ts.addr)
	createTopic(t, admin, "t", 16)
	produceN(t, admin, "t", "r", 20)
	meta := strings.Repeat("m", 4096)
	all := make([]int32, 16)
	for i := range all {
		all[i] = int32(i)
	}
	codesAre(t, "unknown partition", commitMeta(t, admin, "fat", "t", meta, 16, 1000), kerr.UnknownTopicOrPartition)
	codesAre(t, "unknown topic", commitMeta(t, admin, "fat", "nosuch", meta, 0), kerr.UnknownTopicOrPartition)
	codesAre(t, "fat commit", commitMeta(t, admin, "fat", "t", meta, all...), nil)
	held := ts.store.Offsets().Bytes()
	if held < 16*4096 {
		t.Fatalf("%d bytes accounted for 16 partitions with 4 KiB of metadata", held)
	}

	ts.cfg.Storage.MaxOffsetBytes = held / 2
	ts = ts.restart(t)
	admin = newClient(t, ts.addr)
	if n := ts.store.Offsets().Bytes(); n != held {
		t.Fatalf("after restart %d bytes accounted, before %d", n, held)
	}
	page := metricsPage(t, ts.Server)
	for _, want := range []string{
		fmt.Sprintf("logd_group_offsets_bytes %d\n", held),
		fmt.Sprintf("logd_group_offsets_limit_bytes %d\n", held/2),
	} {
		if !strings.Contains(page, want) {
			t.Fatalf("metrics lack %q:\n%s", want, page)
		}
	}
	if got := committed(t, admin, "fat"); got != 1 {
		t.Fatalf("fat's offset of t/0 after restart: %d", got)
	}
	codesAre(t, "the same commit again", commitMeta(t, admin, "fat", "t", meta, all...), nil)
	codesAre(t, "a new group", commitMeta(t, admin, "new", "t", "", 0), kerr.InvalidCommitOffsetSize)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cg := newClient(t, ts.addr, kgo.ConsumerGroup("cg"), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	consume(t, cg, 20)
	if err := cg.CommitUncommittedOffsets(ctx); !errors.Is(err, kerr.InvalidCommitOffsetSize) {
		t.Fatalf("franz-go commit over the budget: %v, want INVALID_COMMIT_OFFSET_SIZE", err)
	}
	if n := ts.metrics.offsetsOverBudget.Load(); n != 2 {
		t.Fatalf("%d refusals counted, want 2", n)
	}
	page = metricsPage(t, ts.Server)
	if !strings.Contains(page, "logd_group_offsets_over_budget_total 2\n") {
		t.Fatalf("metrics lack the refusals:\n%s", page)
	}
	if n := strings.Count(logs.String(), "would pass Storage.MaxOffsetBytes"); n != 1 || strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("%d WARN lines for 2 refusals:\n%s", n, logs.String())
	}

	// Past retention the standalone group expires and makes room.
	clk.advance(time.Hour)
	if err := cg.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("franz-go commit once fat expired: %v", err)
	}
	if got := committed(t, admin, "fat"); got != -1 {
		t.Fatalf("expired group still has offset %d", got)
	}
	if n := ts.store.Offsets().Bytes(); n >= held/2 {
		t.Fatalf("%d bytes accounted after expiry, budget %d", n, held/2)
	}
}
