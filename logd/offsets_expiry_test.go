package logd

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage"
)

// storageClock is the store's clock, moved by hand while the rest of
// the server (sessions, heartbeats) runs on real time.
type storageClock struct{ ms atomic.Int64 }

func (c *storageClock) now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *storageClock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// commitAlone commits offset 1 of t/0 for group as a standalone
// consumer (generation -1, no member) and returns the code.
func commitAlone(t *testing.T, cl *kgo.Client, group string) int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// committed is group's committed offset of t/0, -1 for none.
func committed(t *testing.T, cl *kgo.Client, group string) int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].Offset
}

func listedGroups(t *testing.T, cl *kgo.Client) []string {
	t.Helper()
	resp, err := kmsg.NewPtrListGroupsRequest().RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range resp.Groups {
		out = append(out, g.Group)
	}
	slices.Sort(out)
	return out
}

// TestGroupOffsetsExpire, through franz-go: with Storage.MaxGroups
// groups holding offsets, a new group's commit is refused with
// POLICY_VIOLATION while none has expired; a standalone group expires
// OffsetsRetention after its last commit and makes room; consumer
// groups with members never expire, and one that its last member left
// expires OffsetsRetention later, and is gone from ListGroups.
func TestGroupOffsetsExpire(t *testing.T) {
	clk := &storageClock{}
	clk.ms.Store(time.Now().UnixMilli())
	var logs lockedBuffer
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		c.WarnLogGap = time.Hour
		c.MinSessionTimeout = time.Second
		c.Storage.Now = clk.now
		c.Storage.OffsetsRetention = time.Hour
		c.Storage.MaxGroups = 2
		c.Storage.MaintenanceInterval = -1 // expiry only when a commit needs room
	})
	admin := newClient(t, ts.addr)
	createTopic(t, admin, "t", 1)
	produceN(t, admin, "t", "r", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	member := func(group string) *kgo.Client {
		cl := newClient(t, ts.addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics("t"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(6*time.Second),
			kgo.DisableAutoCommit())
		consume(t, cl, 3)
		return cl
	}

	if code := commitAlone(t, admin, "standalone"); code != 0 {
		t.Fatalf("standalone commit: %v", kerr.ErrorForCode(code))
	}
	live := member("live")
	if err := live.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	// Full, nothing expired: refused, and the client says why.
	if code := commitAlone(t, admin, "new"); code != kerr.PolicyViolation.Code {
		t.Fatalf("commit into a full store: %v, want POLICY_VIOLATION", kerr.ErrorForCode(code))
	}
	// Past retention: the standalone group expires, the live one not.
	clk.advance(2 * time.Hour)
	if code := commitAlone(t, admin, "new"); code != 0 {
		t.Fatalf("commit after expiry: %v", kerr.ErrorForCode(code))
	}
	if got := committed(t, admin, "standalone"); got != -1 {
		t.Fatalf("expired group still has offset %d", got)
	}
	if got := committed(t, admin, "live"); got != 3 {
		t.Fatalf("live group's offset %d, want 3", got)
	}

	// Both groups consumers with members: however old, they stay, and a
	// third group's commit is refused, as franz-go reports.
	other := member("other")
	clk.advance(2 * time.Hour) // "new" expires: "other" takes its place
	if err := other.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	clk.advance(2 * time.Hour)
	third := member("third")
	if err := third.CommitUncommittedOffsets(ctx); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("commit into a store of live groups: %v, want POLICY_VIOLATION", err)
	}
	if got := committed(t, admin, "live"); got != 3 {
		t.Fatalf("live group's offset %d, want 3", got)
	}

	// "other" loses its last member: its offsets last an hour more.
	other.Close()
	if code := commitAlone(t, admin, "new"); code != kerr.PolicyViolation.Code {
		t.Fatalf("commit before the Empty group's retention: %v", kerr.ErrorForCode(code))
	}
	clk.advance(time.Hour)
	if err := third.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit after the Empty group's retention: %v", err)
	}
	if got := committed(t, admin, "other"); got != -1 {
		t.Fatalf("expired group still has offset %d", got)
	}
	if got := listedGroups(t, admin); !slices.Equal(got, []string{"live", "third"}) {
		t.Fatalf("groups listed: %v", got)
	}
	if exp, ref := ts.metrics.offsetsExpired.Load(), ts.metrics.groupsRefused.Load(); exp != 3 || ref != 3 {
		t.Fatalf("counted %d groups expired, %d commits refused; want 3 and 3", exp, ref)
	}
	// One WARN line for the three refusals; none at ERROR.
	if n := strings.Count(logs.String(), "offset commit of a new group refused"); n != 1 || strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("%d WARN lines for 3 refusals:\n%s", n, logs.String())
	}
}

// TestOffsetCommitGroupTooLong: a group name longer than the store
// keeps (storage.MaxGroupBytes, possible in the flexible versions'
// compact strings) is answered INVALID_GROUP_ID, not
// UNKNOWN_SERVER_ERROR.
func TestOffsetCommitGroupTooLong(t *testing.T) {
	ts := startServer(t, t.TempDir())
	cl := newClient(t, ts.addr)
	createTopic(t, cl, "t", 1)
	if code := commitAlone(t, cl, strings.Repeat("g", storage.MaxGroupBytes)); code != 0 {
		t.Fatalf("longest group name: %v", kerr.ErrorForCode(code))
	}
	if code := commitAlone(t, cl, strings.Repeat("g", storage.MaxGroupBytes+1)); code != kerr.InvalidGroupID.Code {
		t.Fatalf("group name too long: %v, want INVALID_GROUP_ID", kerr.ErrorForCode(code))
	}
}
