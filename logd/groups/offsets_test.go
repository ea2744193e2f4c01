package groups

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commitReq commits offset to partitions 0..n-1 of topic "t".
func commitReq(version int16, member string, generation int32, offset int64, n int) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = version
	req.Group = testGroup
	req.MemberID = member
	req.Generation = generation
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = "t"
	for p := range n {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = int32(p)
		rp.Offset = offset
		rp.Metadata = kmsg.StringPtr(fmt.Sprint("m", p))
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	return req
}

// commitCodes lists a response's codes, one per partition.
func commitCodes(resp *kmsg.OffsetCommitResponse) []int16 {
	var codes []int16
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

func mustCommit(t *testing.T, resp *kmsg.OffsetCommitResponse, want *kerr.Error) {
	t.Helper()
	for _, code := range commitCodes(resp) {
		checkCode(t, "OffsetCommit", code, want)
	}
}

func fetchReq(version int16, topics map[string][]int32) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = version
	req.Group = testGroup
	for topic, ps := range topics {
		t := kmsg.NewOffsetFetchRequestTopic()
		t.Topic, t.Partitions = topic, ps
		req.Topics = append(req.Topics, t)
	}
	return req
}

// fetched renders a response's topics as "topic/partition=offset:metadata".
func fetched(resp *kmsg.OffsetFetchResponse) string {
	var out []string
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s/%d=%d:%s", t.Topic, p.Partition, p.Offset, *p.Metadata))
		}
	}
	return strings.Join(out, " ")
}

// Commits are validated by member and generation, and survive the
// coordinator (a new one over the same store answers them).
func TestOffsetCommitByMembers(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stable(2)
	mustCommit(t, h.c.OffsetCommit(commitReq(8, ids[1], gen, 42, 2)), nil)
	mustCommit(t, h.c.OffsetCommit(commitReq(8, ids[1], gen-1, 43, 2)), kerr.IllegalGeneration)
	mustCommit(t, h.c.OffsetCommit(commitReq(8, "nobody", gen, 43, 2)), kerr.UnknownMemberID)
	mustCommit(t, h.c.OffsetCommit(commitReq(8, "", -1, 43, 2)), kerr.UnknownMemberID) // simple commit, group not empty
	fenced := commitReq(8, ids[1], gen, 43, 2)
	fenced.InstanceID = kmsg.StringPtr("i")
	mustCommit(t, h.c.OffsetCommit(fenced), kerr.UnknownMemberID)

	// While rebalancing, members of the generation may still commit …
	b := h.memberID("b")
	jb := h.join(joinReq(4, b))
	mustCommit(t, h.c.OffsetCommit(commitReq(2, ids[1], gen, 44, 1)), nil)
	// … but not between JoinGroup and SyncGroup.
	j0, j1 := h.join(joinReq(4, ids[0])), h.join(joinReq(4, ids[1]))
	for _, j := range []*joinCall{j0, j1, jb} {
		j.must(nil)
	}
	mustCommit(t, h.c.OffsetCommit(commitReq(8, ids[1], gen+1, 45, 1)), kerr.RebalanceInProgress)

	c2, err := New(Config{Offsets: h.store})
	if err != nil {
		t.Fatal(err)
	}
	got := fetched(c2.OffsetFetch(fetchReq(5, map[string][]int32{"t": {0, 1, 2}})))
	if want := "t/0=44:m0 t/1=42:m1 t/2=-1:"; got != want {
		t.Fatalf("fetched %q, want %q", got, want)
	}
}

// Simple commits (generation -1) are accepted for unknown and Empty
// groups, whatever member or instance ID they name, as Kafka accepts
// them (GroupCoordinator.handleCommitOffsets and validateOffsetCommit:
// "generationId < 0 && group.is(Empty)"); a commit with a generation to
// an unknown group is not, nor one with generation -1 to a group with
// members.
func TestSimpleCommit(t *testing.T) {
	h := newHarness(t)
	mustCommit(t, h.c.OffsetCommit(commitReq(8, "", -1, 7, 1)), nil)
	mustCommit(t, h.c.OffsetCommit(commitReq(8, "", 3, 7, 1)), kerr.IllegalGeneration)
	mustCommit(t, h.c.OffsetCommit(commitReq(8, "m", -1, 7, 1)), nil)
	ids, gen := h.stable(1)
	mustCommit(t, h.c.OffsetCommit(commitReq(8, ids[0], -1, 8, 1)), kerr.IllegalGeneration)
	h.c.LeaveGroup(leaveReq(3, ids[0]))
	h.mustState(StateEmpty)
	mustCommit(t, h.c.OffsetCommit(commitReq(8, ids[0], gen, 8, 1)), kerr.UnknownMemberID)
	mustCommit(t, h.c.OffsetCommit(commitReq(0, "", -1, 9, 1)), nil)
	mustCommit(t, h.c.OffsetCommit(commitReq(8, ids[0], -1, 10, 1)), nil)
	static := commitReq(8, "", -1, 11, 1)
	static.InstanceID = kmsg.StringPtr("i")
	mustCommit(t, h.c.OffsetCommit(static), nil)
	if got := fetched(h.c.OffsetFetch(fetchReq(1, map[string][]int32{"t": {0}}))); got != "t/0=11:m0" {
		t.Fatalf("fetched %q", got)
	}
}

func TestCommitPartitionChecks(t *testing.T) {
	h := newHarness(t)
	req := commitReq(8, "", -1, 1, 1)
	bad := kmsg.NewOffsetCommitRequestTopic()
	bad.Topic = "nope"
	for _, p := range []int32{0, -1} {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = p
		bad.Partitions = append(bad.Partitions, rp)
	}
	big := kmsg.NewOffsetCommitRequestTopicPartition()
	big.Partition = 1
	big.Metadata = kmsg.StringPtr(strings.Repeat("x", DefaultMaxOffsetMetadata+1))
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, big)
	req.Topics = append(req.Topics, bad)
	codes := commitCodes(h.c.OffsetCommit(req))
	want := []int16{0, kerr.OffsetMetadataTooLarge.Code, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Fatalf("codes %v, want %v", codes, want)
	}
	if got := len(h.store.All(testGroup)); got != 1 {
		t.Fatalf("%d partitions stored", got)
	}
	resp := h.c.OffsetCommit(func() *kmsg.OffsetCommitRequest { r := commitReq(8, "", -1, 1, 1); r.Group = ""; return r }())
	mustCommit(t, resp, kerr.InvalidGroupID)
}

// failingStore fails every commit with err.
type failingStore struct {
	*MemoryStore
	err error
}

func (s failingStore) Commit(string, []Committed) error { return s.err }

func TestCommitStoreErrors(t *testing.T) {
	for _, tt := range []struct {
		err    error
		want   *kerr.Error
		logged bool // at Info or above: a failure, not a refusal
	}{
		{errors.New("disk on fire"), kerr.UnknownServerError, true},
		{fmt.Errorf("append: %w", kerr.CoordinatorNotAvailable), kerr.CoordinatorNotAvailable, false},
	} {
		var log bytes.Buffer
		h := newHarness(t, func(c *Config) {
			c.Offsets = failingStore{NewMemoryStore(), tt.err}
			c.Logger = slog.New(slog.NewTextHandler(&log, nil))
		})
		req := commitReq(8, "", -1, 1, 2)
		req.Topics[0].Partitions[1].Partition = -1
		codes := commitCodes(h.c.OffsetCommit(req))
		if codes[0] != tt.want.Code || codes[1] != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("%v: codes %v", tt.err, codes)
		}
		if got := h.c.Stats().CommitErrors; got != 1 {
			t.Fatalf("CommitErrors %d", got)
		}
		if got := strings.Contains(log.String(), "offset commit"); got != tt.logged {
			t.Fatalf("%v: logged %v: %q", tt.err, got, log.String())
		}
	}
}

// OffsetFetch with null topics (v2+) returns everything the group has
// committed; v8+ asks for several groups at once.
func TestOffsetFetchAll(t *testing.T) {
	h := newHarness(t)
	if err := h.store.Commit(testGroup, []Committed{{"b", 1, 10, ""}, {"a", 0, 5, "x"}, {"b", 0, 9, ""}}); err != nil {
		t.Fatal(err)
	}
	if err := h.store.Commit("other", []Committed{{"c", 0, 1, ""}}); err != nil {
		t.Fatal(err)
	}
	if got := fetched(h.c.OffsetFetch(fetchReq(7, nil))); got != "a/0=5:x b/0=9: b/1=10:" {
		t.Fatalf("fetched %q", got)
	}
	// An empty topic list (rather than null) asks for nothing.
	req := fetchReq(7, nil)
	req.Topics = []kmsg.OffsetFetchRequestTopic{}
	if got := fetched(h.c.OffsetFetch(req)); got != "" {
		t.Fatalf("fetched %q", got)
	}
	req = fetchReq(3, nil)
	req.Group = ""
	checkCode(t, "OffsetFetch", h.c.OffsetFetch(req).ErrorCode, kerr.InvalidGroupID)

	req = kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	for _, g := range []string{testGroup, "other", "none", ""} {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		if g == "none" {
			rt := kmsg.NewOffsetFetchRequestGroupTopic()
			rt.Topic, rt.Partitions = "c", []int32{0}
			rg.Topics = append(rg.Topics, rt)
		}
		req.Groups = append(req.Groups, rg)
	}
	var got []string
	for _, g := range h.c.OffsetFetch(req).Groups {
		var parts []string
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, fmt.Sprintf("%s/%d=%d", t.Topic, p.Partition, p.Offset))
			}
		}
		got = append(got, fmt.Sprintf("%s[%d]:%s", g.Group, g.ErrorCode, strings.Join(parts, ",")))
	}
	want := fmt.Sprintf("g[0]:a/0=5,b/0=9,b/1=10 other[0]:c/0=1 none[0]:c/0=-1 [%d]:", kerr.InvalidGroupID.Code)
	if strings.Join(got, " ") != want {
		t.Fatalf("got  %s\nwant %s", strings.Join(got, " "), want)
	}
}

// TestOffsetFetchRepeatsAnsweredOnce: a partition named several times in
// one OffsetFetch is answered once, where first named, and so is a group
// named several times (v8+). Kafka answers every mention, but each
// answer carries the commit's metadata (up to MaxOffsetMetadata, 4 KiB):
// a 4-byte partition index repeated 25000 times (100 KB) was answered
// with 100 MB, and a v8 group asking for all its offsets, 4 bytes a
// mention, with all of them at every mention.
func TestOffsetFetchRepeatsAnsweredOnce(t *testing.T) {
	h := newHarness(t)
	meta := strings.Repeat("m", 4096)
	if err := h.store.Commit("s", []Committed{{"t", 0, 5, meta}, {"t", 1, 6, meta}}); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group = 7, "s"
	for _, parts := range [][]int32{{0, 1, 0}, {1, 0}} {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "t", parts
		for range 5000 {
			rt.Partitions = append(rt.Partitions, 0)
		}
		req.Topics = append(req.Topics, rt)
	}
	var got []string
	for _, rt := range h.c.OffsetFetch(req).Topics {
		for _, p := range rt.Partitions {
			got = append(got, fmt.Sprintf("%s/%d@%d", rt.Topic, p.Partition, p.Offset))
		}
	}
	if len(got) != 2 || got[0] != "t/0@5" || got[1] != "t/1@6" {
		t.Errorf("an OffsetFetch naming t/0 and t/1 10002 times was answered with %d partitions (the first %v), want t/0@5 and t/1@6 once each", len(got), got[:min(len(got), 3)])
	}

	req = kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	for range 1000 {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = "s" // Topics null: every committed offset
		req.Groups = append(req.Groups, rg)
	}
	resp := h.c.OffsetFetch(req)
	if len(resp.Groups) != 1 || len(resp.Groups[0].Topics) != 1 || len(resp.Groups[0].Topics[0].Partitions) != 2 {
		t.Errorf("an OffsetFetch v8 naming group s 1000 times was answered with %d groups, want 1 with its 2 partitions", len(resp.Groups))
	}
}
