package groups

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// mustInvariants fails the test if the coordinator's invariants (the
// byte budget counted right and kept among them) do not hold.
func (h *harness) mustInvariants() {
	h.t.Helper()
	if err := h.c.checkInvariants(); err != nil {
		h.t.Fatal(err)
	}
}

// leave makes a member leave its group (LeaveGroup v0).
func (h *harness) leave(group, member string) {
	h.t.Helper()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group, req.MemberID = group, member
	checkCode(h.t, "LeaveGroup", h.c.LeaveGroup(req).ErrorCode, nil)
}

// TestRetainedCountsGroupNames: a group's name counts against
// MaxRetainedBytes for as long as the group is in memory, Empty too. A
// join that would make a group past the budget evicts the groups Empty
// longest to make room (TestBudgetEvictsEmptyGroups: and is refused,
// making no group, when they are not enough); forgetting a group gives
// its name back. Uncounted, MaxGroups (4096) Empty groups with names as
// long as a request allows held whatever a client sent.
func TestRetainedCountsGroupNames(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxMemberBytes, c.MaxRetainedBytes = 100, 5000 })
	name := func(i int) string { return fmt.Sprintf("%d%s", i, strings.Repeat("g", 999)) }
	// A member holds 75 bytes (60 of member ID, client ID and host, 15
	// of protocol); an Empty group its 1000-byte name and its 8-byte
	// "consumer": four Empty groups hold 4032 bytes, and a fifth group
	// with its member would take 5115: each from the fifth on evicts one.
	for i := range 10 {
		req := joinReq(3, "")
		req.Group = name(i)
		h.leave(req.Group, h.join(req).must(nil).MemberID)
		h.mustInvariants()
		h.clock.Advance(time.Millisecond)
	}
	held := func() (int, int64) {
		h.c.mu.Lock()
		defer h.c.mu.Unlock()
		return len(h.c.groups), h.c.retained
	}
	if groups, n := held(); groups != 4 || n != 4*1008 {
		t.Fatalf("%d groups in memory holding %d bytes; want 4 holding %d", groups, n, 4*1008)
	}
	if st := h.c.Stats(); st.OverBudget != 0 || st.GroupsEvicted != 6 {
		t.Errorf("OverBudget %d, GroupsEvicted %d; want 0, 6", st.OverBudget, st.GroupsEvicted)
	}
	if !h.c.ForgetEmpty(name(9)) {
		t.Fatal("ForgetEmpty refused an Empty group")
	}
	if groups, n := held(); groups != 3 || n != 3*1008 {
		t.Fatalf("after ForgetEmpty, %d groups in memory holding %d bytes; want 3 holding %d", groups, n, 3*1008)
	}
	h.mustInvariants()

	// A group evicted to make room gives its name back too.
	h = newHarness(t, func(c *Config) { c.MaxGroups = 2 })
	for i := range 3 {
		req := joinReq(3, "")
		req.Group = name(i)
		h.leave(req.Group, h.join(req).must(nil).MemberID)
		h.mustInvariants()
	}
	if st := h.c.Stats(); st.GroupsEvicted != 1 {
		t.Errorf("GroupsEvicted %d, want 1", st.GroupsEvicted)
	}
}

// TestRetainedCountsProtocolType: a group's protocol type, set by its
// first member and kept while it is Empty, counts against
// MaxRetainedBytes; the first member of an Empty group that brings a
// shorter one gives the difference back.
func TestRetainedCountsProtocolType(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxMemberBytes, c.MaxRetainedBytes = 100, 2000 })
	long := strings.Repeat("t", 1500)
	join := func(group, protocolType string) *joinCall {
		req := joinReq(3, "")
		req.Group, req.ProtocolType = group, protocolType
		return h.join(req)
	}
	a := join("a", long).must(nil) // 1 + 1500 + 5 ("range" chosen) + 75 bytes
	h.mustInvariants()
	join("b", long).must(kerr.CoordinatorNotAvailable)
	join("b", consumerProtocol).must(nil) // 1 + 8 + 5 + 75 more
	h.mustInvariants()
	h.leave("a", a.MemberID) // "a" Empty keeps its type, not its protocol
	h.mustInvariants()
	held := func() int64 {
		h.c.mu.Lock()
		defer h.c.mu.Unlock()
		return h.c.retained
	}
	if n := held(); n != 1+1500+1+8+5+75 {
		t.Fatalf("%d bytes held, want %d", n, 1+1500+1+8+5+75)
	}
	join("a", "short").must(nil) // gives 1495 bytes back
	h.mustInvariants()
	if n := held(); n != 1+5+5+75+1+8+5+75 {
		t.Fatalf("%d bytes held after a shorter type, want %d", n, 1+5+5+75+1+8+5+75)
	}
	join("c", long).must(nil)
	h.mustInvariants()
	if st := h.c.Stats(); st.OverBudget != 1 || st.GroupsEvicted != 0 {
		t.Errorf("OverBudget %d, GroupsEvicted %d; want 1, 0", st.OverBudget, st.GroupsEvicted)
	}
}

// TestCommitMetadataBounded: a committed offset's metadata longer than
// MaxOffsetMetadata is refused for its partition with
// OFFSET_METADATA_TOO_LARGE, as Kafka's offset.metadata.max.bytes, and
// counted; the request's other partitions are committed.
func TestCommitMetadataBounded(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxOffsetMetadata = 10 })
	req := commitReq(8, "", -1, 5, 4)
	for i, n := range []int{10, 11, 0, 1 << 20} {
		req.Topics[0].Partitions[i].Metadata = kmsg.StringPtr(strings.Repeat("m", n))
	}
	codes := commitCodes(h.c.OffsetCommit(req))
	tooLarge := kerr.OffsetMetadataTooLarge.Code
	if want := []int16{0, tooLarge, 0, tooLarge}; fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Fatalf("codes %v, want %v", codes, want)
	}
	got := h.store.All(testGroup)
	if len(got) != 2 || got[0].Metadata != strings.Repeat("m", 10) || got[1].Partition != 2 {
		t.Fatalf("stored %v, want partitions 0 and 2", got)
	}
	if st := h.c.Stats(); st.MetadataTooLarge != 2 || st.CommitErrors != 0 {
		t.Errorf("MetadataTooLarge %d, CommitErrors %d; want 2, 0", st.MetadataTooLarge, st.CommitErrors)
	}
}
