package groups

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestBudgetEvictsEmptyGroups: Empty groups that never committed (so
// that no offset expiry forgets them) and fill MaxRetainedBytes with
// their names and protocol types, below MaxGroups, do not lock the
// coordinator: a new group, and a new member of a live group, make room
// by evicting the groups Empty longest, as a new group does at
// MaxGroups. Without it every such join was refused for good. What
// members hold is never evicted: with no Empty group left to go, a join
// past the budget is refused and counted.
func TestBudgetEvictsEmptyGroups(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxMemberBytes, c.MaxRetainedBytes = 100, 4200 })
	name := func(i int) string { return fmt.Sprintf("%d%s", i, strings.Repeat("g", 999)) }
	join := func(group string) *joinCall {
		req := joinReq(3, "")
		req.Group = group
		return h.join(req)
	}
	join("live").must(nil) // 4 + 8 + 5 ("range" chosen) + 75 bytes, kept all along
	// Each Empty group holds 1008 bytes (1088 while its member is in):
	// four fit beside "live", 4124 bytes in all.
	for i := range 4 {
		h.leave(name(i), join(name(i)).must(nil).MemberID)
		h.clock.Advance(testSession / 10)
	}
	h.mustInvariants()
	// A new group: name(0), Empty longest, makes room.
	h.leave(name(4), join(name(4)).must(nil).MemberID)
	h.mustInvariants()
	// A new member of the live group, holding 155 bytes: name(1) goes.
	req := joinReq(3, "")
	req.Group = "live"
	req.Protocols[0].Metadata = make([]byte, 90)
	if second := h.join(req); second.w == nil {
		t.Fatalf("a new member of the live group answered at once: %v", kerr.ErrorForCode(second.resp.ErrorCode))
	}
	h.mustInvariants()
	h.c.mu.Lock()
	_, kept0 := h.c.groups[name(0)]
	_, kept1 := h.c.groups[name(1)]
	_, kept2 := h.c.groups[name(2)]
	h.c.mu.Unlock()
	if kept0 || kept1 || !kept2 {
		t.Errorf("groups 0, 1, 2 in memory: %v %v %v; want the two Empty longest evicted", kept0, kept1, kept2)
	}
	if st := h.c.Stats(); st.GroupsEvicted != 2 || st.OverBudget != 0 {
		t.Errorf("GroupsEvicted %d, OverBudget %d; want 2, 0", st.GroupsEvicted, st.OverBudget)
	}

	// Only members hold the budget: nothing to evict, the join refused.
	h = newHarness(t, func(c *Config) { c.MaxMemberBytes, c.MaxRetainedBytes = 100, 2200 })
	join = func(group string) *joinCall {
		req := joinReq(3, "")
		req.Group = group
		return h.join(req)
	}
	join(name(0)).must(nil)
	join(name(1)).must(nil)
	join(name(2)).must(kerr.CoordinatorNotAvailable)
	h.mustInvariants()
	h.c.mu.Lock()
	groups := len(h.c.groups)
	h.c.mu.Unlock()
	if groups != 2 {
		t.Errorf("%d groups in memory after a refused join, want 2: a refused join makes no group", groups)
	}
	if st := h.c.Stats(); st.GroupsEvicted != 0 || st.OverBudget != 1 {
		t.Errorf("GroupsEvicted %d, OverBudget %d; want 0, 1", st.GroupsEvicted, st.OverBudget)
	}
}
