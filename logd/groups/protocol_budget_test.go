package groups

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// protocol is the group's chosen protocol and the bytes counted held.
func (h *harness) protocol(group string) (string, int64) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	var p string
	if g := h.c.groups[group]; g != nil {
		p = g.protocol
	}
	return p, h.c.retained
}

func (h *harness) mustProtocol(group, want string) {
	h.t.Helper()
	h.mustInvariants()
	if got, _ := h.protocol(group); got != want {
		h.t.Fatalf("group %s chose protocol %.10q, want %.10q", group, got, want)
	}
}

// TestRetainedCountsChosenProtocol: the protocol a group chooses for its
// generation is its own copy, counted against MaxRetainedBytes until the
// next generation chooses another or the group empties (the invariants
// recount it, and fail when it shares a member's bytes). It used to be
// the string of the member it came from: after that member left and gave
// its bytes back, the group still held them, uncounted.
func TestRetainedCountsChosenProtocol(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxGroups = 1 })
	long := strings.Repeat("p", 200)
	a := h.join(joinReq(3, "", long, "range")).must(nil)
	h.mustProtocol(testGroup, long)
	b := h.join(joinReq(3, "", long, "range"))
	b.waiting()
	h.join(joinReq(3, a.MemberID, long, "range")).must(nil)
	b.must(nil)
	h.mustProtocol(testGroup, long)
	// The member that brought the name leaves; the group keeps it, counted,
	// until the rebalance completes.
	h.leave(testGroup, a.MemberID)
	h.mustState(StatePreparingRebalance)
	h.mustProtocol(testGroup, long)
	_, before := h.protocol(testGroup)
	bID := b.resp.MemberID
	h.join(joinReq(3, bID, "range", long)).must(nil)
	h.mustProtocol(testGroup, "range")
	if _, after := h.protocol(testGroup); after != before-int64(len(long)-len("range")) {
		t.Fatalf("choosing range over the long name: %d bytes held, was %d", after, before)
	}
	h.leave(testGroup, bID)
	h.mustState(StateEmpty)
	h.mustProtocol(testGroup, "")
	// At MaxGroups, a new group evicts the Empty one.
	req := joinReq(3, "", long)
	req.Group = "other"
	other := h.join(req).must(nil).MemberID
	h.mustProtocol("other", long)
	if st := h.c.Stats(); st.GroupsEvicted != 1 {
		t.Fatalf("GroupsEvicted %d, want 1", st.GroupsEvicted)
	}
	h.leave("other", other)
	if !h.c.ForgetEmpty("other") {
		t.Fatal("Empty group not forgotten")
	}
	h.mustInvariants()
	if _, n := h.protocol("other"); n != 0 {
		t.Fatalf("%d bytes held with no group", n)
	}
}

// TestChosenProtocolPastBudget: a protocol chosen as a rebalance ends is
// counted even when it takes the count past MaxRetainedBytes (refusing
// would fail a rebalance every member has joined; the name is one of a
// member's, already counted); joins that add bytes are then refused until
// the count is back under.
func TestChosenProtocolPastBudget(t *testing.T) {
	const budget = 400
	h := newHarness(t, func(c *Config) { c.MaxMemberBytes, c.MaxRetainedBytes = 200, budget })
	long := strings.Repeat("p", 40)
	a := h.join(joinReq(3, "", "x", long)).must(nil)
	h.mustProtocol(testGroup, "x")
	// Another group fills the budget: 1 + 8 of name and type, 60 of
	// member ID, client ID and host, 1 + len(metadata) of protocol, and
	// 1 of protocol chosen.
	_, held := h.protocol(testGroup)
	fill := joinReq(3, "", "f")
	fill.Group = "f"
	fill.Protocols[0].Metadata = make([]byte, budget-held-71)
	f := h.join(fill).must(nil)
	if _, n := h.protocol("f"); n != budget {
		t.Fatalf("%d bytes held, want the budget, %d", n, budget)
	}
	// The leader prefers the long name now: its protocols hold as many
	// bytes as before, and the rebalance chooses the long name, 39 bytes
	// more than the budget.
	h.join(joinReq(3, a.MemberID, long, "x")).must(nil)
	h.mustProtocol(testGroup, long)
	if _, n := h.protocol(testGroup); n != budget+39 {
		t.Fatalf("%d bytes held, want %d", n, budget+39)
	}
	other := joinReq(3, "")
	other.Group = "h"
	h.join(other).must(kerr.CoordinatorNotAvailable)
	h.leave("f", f.MemberID)
	h.join(other).must(nil) // back under the budget
	h.mustProtocol("h", "range")
	if st := h.c.Stats(); st.OverBudget != 1 || st.GroupsEvicted != 0 {
		t.Errorf("OverBudget %d, GroupsEvicted %d; want 1, 0", st.OverBudget, st.GroupsEvicted)
	}
}
