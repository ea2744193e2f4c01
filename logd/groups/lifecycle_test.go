package groups

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func leaveReq(version int16, members ...string) *kmsg.LeaveGroupRequest {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = version
	req.Group = testGroup
	if version < 3 {
		req.MemberID = members[0]
		return req
	}
	for _, id := range members {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = id
		req.Members = append(req.Members, m)
	}
	return req
}

// A member leaving makes the others rejoin; the last one leaving
// empties the group.
func TestLeave(t *testing.T) {
	for _, version := range []int16{0, 2, 3, 5} {
		h := newHarness(t)
		ids, gen := h.stable(3)
		resp := h.c.LeaveGroup(leaveReq(version, ids[0]))
		checkCode(t, "LeaveGroup", resp.ErrorCode, nil)
		if version >= 3 && (len(resp.Members) != 1 || resp.Members[0].MemberID != ids[0] || resp.Members[0].ErrorCode != 0) {
			t.Fatalf("v%d: members %+v", version, resp.Members)
		}
		h.mustState(StatePreparingRebalance)
		h.mustHeartbeat(ids[0], gen, kerr.UnknownMemberID)
		h.mustHeartbeat(ids[1], gen, kerr.RebalanceInProgress)
		j1, j2 := h.join(joinReq(4, ids[1])), h.join(joinReq(4, ids[2]))
		r1, r2 := j1.must(nil), j2.must(nil)
		if r1.Generation != gen+1 || r1.LeaderID != ids[1] || r2.LeaderID != ids[1] || len(r1.Members) != 2 {
			t.Fatalf("v%d: after leave: %+v", version, r1)
		}
		if version >= 3 {
			resp = h.c.LeaveGroup(leaveReq(version, ids[1], ids[2], "nobody"))
			codes := []int16{resp.Members[0].ErrorCode, resp.Members[1].ErrorCode, resp.Members[2].ErrorCode}
			if codes[0] != 0 || codes[1] != 0 || codes[2] != kerr.UnknownMemberID.Code {
				t.Fatalf("v%d: codes %v", version, codes)
			}
		} else {
			h.c.LeaveGroup(leaveReq(version, ids[1]))
			h.join(joinReq(4, ids[2])).must(nil)
			h.c.LeaveGroup(leaveReq(version, ids[2]))
			checkCode(t, "LeaveGroup", h.c.LeaveGroup(leaveReq(version, ids[2])).ErrorCode, kerr.UnknownMemberID)
		}
		h.mustState(StateEmpty)
		if st := h.c.Stats(); st.Left != 3 {
			t.Fatalf("v%d: Left %d", version, st.Left)
		}
	}
}

// A member leaving while others wait in SyncGroup sends them back to
// join; one leaving while the rest wait in JoinGroup lets the rebalance
// complete.
func TestLeaveWhileWaiting(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stable(3)
	j0, j1 := h.join(joinReq(4, ids[0])), h.join(joinReq(4, ids[1]))
	j0.waiting()
	h.c.LeaveGroup(leaveReq(3, ids[2]))
	r0 := j0.must(nil)
	j1.must(nil)
	if r0.Generation != gen+1 || len(r0.Members) != 2 {
		t.Fatalf("%+v", r0)
	}
	s1 := h.sync(syncReq(4, ids[1], gen+1, nil))
	s1.waiting()
	h.c.LeaveGroup(leaveReq(3, ids[0]))
	s1.must(kerr.RebalanceInProgress)
	// A member leaving while waiting in JoinGroup gets UNKNOWN_MEMBER_ID.
	j1 = h.join(joinReq(4, ids[1]))
	if r := j1.must(nil); r.Generation != gen+2 {
		t.Fatalf("generation %d", r.Generation)
	}
	b := h.memberID("b")
	jb := h.join(joinReq(4, b))
	jb.waiting()
	h.c.LeaveGroup(leaveReq(3, b))
	jb.must(kerr.UnknownMemberID)
	// Alone again: its rejoin completes at once.
	if r := h.join(joinReq(4, ids[1], "range", "sticky")).must(nil); r.Generation != gen+3 {
		t.Fatalf("generation %d", r.Generation)
	}
	h.sync(syncReq(4, ids[1], gen+3, nil)).must(nil)
	// A pending member ID given back does not disturb a Stable group.
	c := h.memberID("c")
	h.c.LeaveGroup(leaveReq(3, c))
	h.mustState(StateStable)
	h.mustHeartbeat(ids[1], gen+3, nil)
}

// A member that stops heartbeating is removed after its session timeout
// and the group rebalances; the last one going empties it.
func TestSessionExpiry(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stable(2)
	for range 3 {
		h.tick(testSession / 3)
		h.mustHeartbeat(ids[0], gen, nil)
	}
	h.mustState(StateStable)
	h.tick(testSession / 10) // ids[1] last heard from 10 s ago
	h.mustState(StatePreparingRebalance)
	h.mustHeartbeat(ids[1], gen, kerr.UnknownMemberID)
	h.mustHeartbeat(ids[0], gen, kerr.RebalanceInProgress)
	r := h.join(joinReq(4, ids[0])).must(nil)
	if r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("%+v", r)
	}
	h.sync(syncReq(4, ids[0], gen+1, nil)).must(nil)
	h.tick(testSession)
	h.mustState(StateEmpty)
	if st := h.c.Stats(); st.Expired != 2 {
		t.Fatalf("Expired %d", st.Expired)
	}
	if g := h.c.Groups()[0]; g.Generation != gen+2 || g.Members != 0 {
		t.Fatalf("%+v", g)
	}
}

// A member waiting in JoinGroup or SyncGroup is not expired, however
// long it waits.
func TestWaitingMembersDoNotExpire(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stable(2)
	j0 := h.join(joinReq(4, ids[0]))
	for range 3 {
		h.tick(testSession / 2)
		h.mustHeartbeat(ids[1], gen, kerr.RebalanceInProgress)
	}
	j1 := h.join(joinReq(4, ids[1]))
	j0.must(nil)
	j1.must(nil)
	s1 := h.sync(syncReq(4, ids[1], gen+1, nil))
	h.tick(testSession - time.Millisecond)
	s1.waiting()
	h.tick(time.Millisecond) // the silent leader expires; ids[1], waiting, does not
	s1.must(kerr.RebalanceInProgress)
	h.mustHeartbeat(ids[0], gen+1, kerr.UnknownMemberID)
	h.mustHeartbeat(ids[1], gen+1, kerr.RebalanceInProgress)
}

// A leader that joins and heartbeats but never syncs is removed after
// the rebalance timeout, and the followers rebalance without it.
func TestLeaderNeverSyncs(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stable(2)
	h.join(joinReq(4, ids[1])).must(nil) // unchanged: no rebalance
	req := joinReq(4, ids[1])
	req.Protocols[0].Metadata = []byte("changed")
	j1 := h.join(req)
	h.join(joinReq(4, ids[0])).must(nil)
	j1.must(nil)
	s1 := h.sync(syncReq(4, ids[1], gen+1, nil))
	for range 3 {
		h.tick(testSession / 2)
		h.mustHeartbeat(ids[0], gen+1, nil)
		s1.waiting()
	}
	h.tick(testSession / 2) // the rebalance timeout
	s1.must(kerr.RebalanceInProgress)
	h.mustHeartbeat(ids[0], gen+1, kerr.UnknownMemberID)
	if got := h.c.Stats().NotSynced; got != 1 {
		t.Fatalf("NotSynced %d", got)
	}
	if r := h.join(joinReq(4, ids[1])).must(nil); r.LeaderID != ids[1] || r.Generation != gen+2 {
		t.Fatalf("%+v", r)
	}
}

func TestSyncErrors(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stable(2)
	tests := []struct {
		name string
		req  *kmsg.SyncGroupRequest
		want *kerr.Error
	}{
		{"no group", func() *kmsg.SyncGroupRequest { r := syncReq(4, ids[0], gen, nil); r.Group = ""; return r }(), kerr.InvalidGroupID},
		{"unknown group", func() *kmsg.SyncGroupRequest { r := syncReq(4, ids[0], gen, nil); r.Group = "other"; return r }(), kerr.UnknownMemberID},
		{"unknown member", syncReq(4, "nobody", gen, nil), kerr.UnknownMemberID},
		{"old generation", syncReq(4, ids[1], gen-1, nil), kerr.IllegalGeneration},
		{"other protocol type", func() *kmsg.SyncGroupRequest {
			r := syncReq(5, ids[1], gen, nil)
			r.ProtocolType = kmsg.StringPtr("connect")
			return r
		}(), kerr.InconsistentGroupProtocol},
		{"other protocol", func() *kmsg.SyncGroupRequest {
			r := syncReq(5, ids[1], gen, nil)
			r.Protocol = kmsg.StringPtr("sticky")
			return r
		}(), kerr.InconsistentGroupProtocol},
		{"unknown instance", func() *kmsg.SyncGroupRequest {
			r := syncReq(5, ids[1], gen, nil)
			r.InstanceID = kmsg.StringPtr("i")
			return r
		}(), kerr.UnknownMemberID},
		{"assignment too large", syncReq(4, ids[0], gen, map[string]string{ids[0]: string(make([]byte, DefaultMaxMemberBytes+1))}), kerr.InvalidRequest},
		{"stable", syncReq(5, ids[1], gen, nil), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.t = t
			h.sync(tt.req).must(tt.want)
		})
	}
}

func TestHeartbeatErrors(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stable(2)
	hb := func(mod func(*kmsg.HeartbeatRequest)) *kmsg.HeartbeatRequest {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation = testGroup, ids[1], gen
		mod(req)
		return req
	}
	tests := []struct {
		name string
		req  *kmsg.HeartbeatRequest
		want *kerr.Error
	}{
		{"ok", hb(func(*kmsg.HeartbeatRequest) {}), nil},
		{"no group", hb(func(r *kmsg.HeartbeatRequest) { r.Group = "" }), kerr.InvalidGroupID},
		{"unknown group", hb(func(r *kmsg.HeartbeatRequest) { r.Group = "x" }), kerr.UnknownMemberID},
		{"unknown member", hb(func(r *kmsg.HeartbeatRequest) { r.MemberID = "x" }), kerr.UnknownMemberID},
		{"old generation", hb(func(r *kmsg.HeartbeatRequest) { r.Generation-- }), kerr.IllegalGeneration},
		{"next generation", hb(func(r *kmsg.HeartbeatRequest) { r.Generation++ }), kerr.IllegalGeneration},
		{"unknown instance", hb(func(r *kmsg.HeartbeatRequest) { r.InstanceID = kmsg.StringPtr("x") }), kerr.UnknownMemberID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkCode(t, "Heartbeat", h.c.Heartbeat(tt.req).ErrorCode, tt.want)
		})
	}
}

// A pending member ID cannot heartbeat: it is not a member yet.
func TestPendingHeartbeat(t *testing.T) {
	h := newHarness(t)
	_, gen := h.stable(1)
	h.mustHeartbeat(h.memberID("b"), gen, kerr.UnknownMemberID)
}

// A member leaving or syncing again while it waits in SyncGroup: the
// wait is answered, never left hanging.
func TestSyncWaiterReplaced(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stable(3)
	h.c.LeaveGroup(leaveReq(3, ids[0]))
	j1, j2 := h.join(joinReq(4, ids[1])), h.join(joinReq(4, ids[2]))
	r1 := j1.must(nil)
	j2.must(nil)
	follower := ids[1]
	if r1.LeaderID == ids[1] {
		follower = ids[2]
	}
	first := h.sync(syncReq(4, follower, gen+1, nil))
	second := h.sync(syncReq(4, follower, gen+1, nil))
	first.must(kerr.RebalanceInProgress)
	second.waiting()
	h.c.LeaveGroup(leaveReq(3, follower))
	second.must(kerr.UnknownMemberID)
	h.noWaiters()
}

func TestMiscErrors(t *testing.T) {
	h := newHarness(t)
	checkCode(t, "LeaveGroup", h.c.LeaveGroup(&kmsg.LeaveGroupRequest{}).ErrorCode, kerr.InvalidGroupID)
	checkCode(t, "LeaveGroup", h.c.LeaveGroup(leaveReq(1, "x")).ErrorCode, kerr.UnknownMemberID)
	if r := h.c.JoinGroup(t.Context(), joinReq(4, "x"), "c", "h"); r.ErrorCode != kerr.UnknownMemberID.Code || r.MemberID != "x" {
		t.Fatalf("%+v", r)
	}
	if got := nextGeneration(1<<31 - 1); got != 1 {
		t.Fatalf("generation after the largest: %d", got)
	}
	if got := State(9).String(); got != "Unknown" {
		t.Fatalf("State(9) = %s", got)
	}
}
