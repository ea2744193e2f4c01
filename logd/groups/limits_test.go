package groups

import (
	"fmt"
	"strings"
	"testing"

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
// join that would make a group past the budget is refused with
// COORDINATOR_NOT_AVAILABLE, counted, and makes no group; forgetting a
// group gives its name back. Uncounted, MaxGroups (4096) Empty groups
// with names as long as a request allows held whatever a client sent.
func TestRetainedCountsGroupNames(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxMemberBytes, c.MaxRetainedBytes = 100, 5000 })
	name := func(i int) string { return fmt.Sprintf("%d%s", i, strings.Repeat("g", 999)) }
	// A member holds 75 bytes (60 of member ID, client ID and host, 15
	// of protocol); an Empty group its 1000-byte name and its 8-byte
	// "consumer": four Empty groups hold 4032 bytes, and a fifth group
	// with its member would take 5115.
	made := 0
	for i := range 10 {
		req := joinReq(3, "")
		req.Group = name(i)
		r := h.join(req)
		if r.w == nil && r.resp.ErrorCode == kerr.CoordinatorNotAvailable.Code {
			break
		}
		h.leave(req.Group, r.must(nil).MemberID)
		h.mustInvariants()
		made++
	}
	h.c.mu.Lock()
	groups, held := len(h.c.groups), h.c.retained
	h.c.mu.Unlock()
	if made != 4 || groups != 4 || held != 4*1008 {
		t.Fatalf("%d groups made, %d in memory holding %d bytes; want 4 holding %d", made, groups, held, 4*1008)
	}
	if st := h.c.Stats(); st.OverBudget != 1 {
		t.Errorf("OverBudget %d, want 1", st.OverBudget)
	}
	if !h.c.ForgetEmpty(name(0)) {
		t.Fatal("ForgetEmpty refused an Empty group")
	}
	req := joinReq(3, "")
	req.Group = name(4)
	h.join(req).must(nil)
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
	a := join("a", long).must(nil) // 1 + 1500 + 75 bytes
	h.mustInvariants()
	join("b", long).must(kerr.CoordinatorNotAvailable)
	join("b", consumerProtocol).must(nil) // 1 + 8 + 75 more
	h.mustInvariants()
	h.leave("a", a.MemberID) // "a" Empty keeps its type
	h.mustInvariants()
	join("c", long).must(kerr.CoordinatorNotAvailable)
	join("a", "short").must(nil) // gives 1495 bytes back
	h.mustInvariants()
	join("c", long).must(nil)
	h.mustInvariants()
	if st := h.c.Stats(); st.OverBudget != 2 {
		t.Errorf("OverBudget %d, want 2", st.OverBudget)
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
