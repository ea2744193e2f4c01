package groups

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func staticReq(version int16, instance, member string, protocols ...string) *kmsg.JoinGroupRequest {
	req := joinReq(version, member, protocols...)
	req.InstanceID = kmsg.StringPtr(instance)
	return req
}

// staticGroup forms a Stable group of static members "i0", "i1", …
// (i0 leads) and returns their member IDs and the generation.
func (h *harness) staticGroup(n int) ([]string, int32) {
	h.t.Helper()
	var ids []string
	for i := range n {
		inst := "i" + string(rune('0'+i))
		calls := []*joinCall{h.join(staticReq(5, inst, ""))} // no MEMBER_ID_REQUIRED for static members
		for _, id := range ids {
			calls = append(calls, h.join(joinReq(5, id)))
		}
		r := calls[0].must(nil)
		if !strings.HasPrefix(r.MemberID, inst+"-") {
			h.t.Fatalf("member ID %q", r.MemberID)
		}
		ids = append(ids, r.MemberID)
		for _, c := range calls[1:] {
			c.must(nil)
		}
	}
	gen := h.c.Groups()[0].Generation
	assign := map[string]string{}
	for _, id := range ids {
		assign[id] = "a:" + id
	}
	h.sync(syncReq(5, ids[0], gen, assign)).must(nil)
	h.mustState(StateStable)
	return ids, gen
}

// A static member restarting (its instance ID, no member ID) replaces
// its old self without a rebalance; the old member ID is fenced.
func TestStaticRejoin(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.staticGroup(2)
	r := h.join(staticReq(5, "i1", "")).must(nil)
	if r.MemberID == ids[1] || r.Generation != gen || r.LeaderID != ids[0] {
		t.Fatalf("%+v", r)
	}
	h.mustState(StateStable)
	fresh := r.MemberID
	// The new member ID gets the old one's assignment at once.
	if s := h.sync(syncReq(5, fresh, gen, nil)).must(nil); string(s.MemberAssignment) != "a:"+ids[1] {
		t.Fatalf("assignment %q", s.MemberAssignment)
	}
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation, req.InstanceID = testGroup, ids[1], gen, kmsg.StringPtr("i1")
	checkCode(t, "Heartbeat", h.c.Heartbeat(req).ErrorCode, kerr.FencedInstanceID)
	h.join(staticReq(5, "i1", ids[1])).must(kerr.FencedInstanceID)
	h.mustHeartbeat(fresh, gen, nil)
	if got := h.c.Stats().Fenced; got != 1 {
		t.Fatalf("Fenced %d", got)
	}
}

// A replaced static leader is told to skip assignment (v9).
func TestStaticLeaderRejoin(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.staticGroup(2)
	r := h.join(staticReq(9, "i0", "")).must(nil)
	if r.LeaderID != r.MemberID || !r.SkipAssignment || len(r.Members) != 2 || r.Generation != gen {
		t.Fatalf("%+v", r)
	}
	if r.Members[0].MemberID != r.MemberID || *r.Members[0].InstanceID != "i0" || r.Members[1].MemberID != ids[1] {
		t.Fatalf("members %+v", r.Members)
	}
	h.mustState(StateStable)
}

// A static member restarting with other protocols, or while the group
// rebalances, rebalances it; calls the old member ID waits in are
// fenced.
func TestStaticRejoinRebalances(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.staticGroup(2)
	j1 := h.join(staticReq(5, "i1", ids[1], "range", "sticky"))
	j1.waiting()
	r := h.join(staticReq(5, "i1", "", "sticky", "range")) // the instance restarted meanwhile
	j1.must(kerr.FencedInstanceID)
	r.waiting()
	j0 := h.join(joinReq(5, ids[0]))
	r0 := j0.must(nil)
	if r1 := r.must(nil); r1.Generation != gen+1 || r0.LeaderID != ids[0] {
		t.Fatalf("%+v", r1)
	}
	if len(r0.Members) != 2 || r0.Members[1].MemberID != r.resp.MemberID {
		t.Fatalf("members %+v", r0.Members)
	}
}

// Static members that have not rejoined stay in the generation; they are
// removed when their session lapses.
func TestStaticMemberKeptThroughRebalance(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.staticGroup(2)
	c := h.join(joinReq(3, ""))
	j0 := h.join(joinReq(5, ids[0]))
	for range 3 {
		h.tick(testSession / 2)
		h.mustHeartbeat(ids[0], gen, kerr.RebalanceInProgress)
		h.mustHeartbeat(ids[1], gen, kerr.RebalanceInProgress)
	}
	h.tick(testSession / 2) // the rebalance timeout
	r0 := j0.must(nil)
	c.must(nil)
	if r0.Generation != gen+1 || len(r0.Members) != 3 {
		t.Fatalf("generation %d, %d members", r0.Generation, len(r0.Members))
	}
	h.tick(testSession)
	h.mustHeartbeat(ids[1], gen+1, kerr.UnknownMemberID)
}

// LeaveGroup v3+ can name a static member by its instance ID.
func TestStaticLeave(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.staticGroup(2)
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 4
	req.Group = testGroup
	for _, m := range []struct{ member, instance string }{{"", "i1"}, {"wrong", "i0"}, {"", "i9"}} {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID, lm.InstanceID = m.member, kmsg.StringPtr(m.instance)
		req.Members = append(req.Members, lm)
	}
	resp := h.c.LeaveGroup(req)
	want := []int16{0, kerr.FencedInstanceID.Code, kerr.UnknownMemberID.Code}
	for i, m := range resp.Members {
		if m.ErrorCode != want[i] {
			t.Fatalf("member %d: %v", i, kerr.ErrorForCode(m.ErrorCode))
		}
	}
	h.mustHeartbeat(ids[1], gen, kerr.UnknownMemberID)
	h.mustHeartbeat(ids[0], gen, kerr.RebalanceInProgress)
	// The instance ID is free again: a new instance joins as a new member.
	if r := h.join(staticReq(5, "i1", "")); r.w == nil {
		t.Fatalf("rejoin answered at once: %+v", r.resp)
	}
}
