package groups

import (
	"slices"
	"testing"
)

// TestActiveGroups: a group is active from the member ID it hands out
// until its last member leaves; only then may ForgetEmpty drop it.
func TestActiveGroups(t *testing.T) {
	h := newHarness(t)
	active := func(want ...string) {
		t.Helper()
		if got := h.c.ActiveGroups(); !slices.Equal(got, want) {
			t.Fatalf("ActiveGroups %v, want %v", got, want)
		}
	}
	active()
	id := h.memberID("c")
	active(testGroup)
	if h.c.ForgetEmpty(testGroup) {
		t.Fatal("forgot a group with a member ID handed out")
	}
	h.join(joinReq(4, id)).must(nil)
	active(testGroup)
	if h.c.ForgetEmpty(testGroup) {
		t.Fatal("forgot a group with a member")
	}
	checkCode(t, "LeaveGroup", h.c.LeaveGroup(leaveReq(3, id)).ErrorCode, nil)
	h.mustState(StateEmpty)
	active()
	if !h.c.ForgetEmpty(testGroup) {
		t.Fatal("an Empty group not forgotten")
	}
	h.mustState(StateDead)
	if h.c.ForgetEmpty("never") {
		t.Fatal("forgot a group never seen")
	}
}
