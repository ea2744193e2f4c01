package groups

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Two members starting together form one generation: the leader gets
// both members' metadata, assigns, and each member syncs and gets its
// own assignment.
func TestTwoMembersOneGeneration(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.InitialRebalanceDelay = 3 * time.Second })
	a, b := h.memberID("ca"), h.memberID("cb")
	if !strings.HasPrefix(a, "ca-") || !strings.HasPrefix(b, "cb-") || a == b {
		t.Fatalf("member IDs %q %q", a, b)
	}
	ja := h.join(joinReq(4, a, "range", "roundrobin"))
	h.tick(time.Second)
	jb := h.join(joinReq(4, b, "roundrobin", "range"))
	ja.waiting()
	jb.waiting()
	h.mustState(StatePreparingRebalance)
	h.tick(2 * time.Second) // 3 s after the first join, but b extended the delay
	ja.waiting()
	h.tick(time.Second)
	ra, rb := ja.must(nil), jb.must(nil)
	if ra.Generation != 1 || rb.Generation != 1 {
		t.Fatalf("generations %d %d, want 1", ra.Generation, rb.Generation)
	}
	if ra.LeaderID != a || rb.LeaderID != a {
		t.Fatalf("leaders %s %s, want %s (first to join)", ra.LeaderID, rb.LeaderID, a)
	}
	// One vote each: the tie goes to the smaller name.
	if *ra.Protocol != "range" || *rb.Protocol != "range" || *ra.ProtocolType != consumerProtocol {
		t.Fatalf("protocol %s/%s %s", *ra.Protocol, *rb.Protocol, *ra.ProtocolType)
	}
	if len(ra.Members) != 2 || len(rb.Members) != 0 {
		t.Fatalf("leader got %d members, follower %d", len(ra.Members), len(rb.Members))
	}
	for i, want := range []string{a, b} {
		if m := ra.Members[i]; m.MemberID != want || string(m.ProtocolMetadata) != "meta:range" {
			t.Fatalf("member %d: %s %q", i, m.MemberID, m.ProtocolMetadata)
		}
	}
	h.mustState(StateCompletingRebalance)

	sb := h.sync(syncReq(5, b, 1, nil))
	sb.waiting()
	sa := h.sync(syncReq(5, a, 1, map[string]string{a: "A", b: "B"}))
	if r := sa.must(nil); string(r.MemberAssignment) != "A" || *r.Protocol != "range" || *r.ProtocolType != consumerProtocol {
		t.Fatalf("leader sync %+v", r)
	}
	if r := sb.must(nil); string(r.MemberAssignment) != "B" {
		t.Fatalf("follower assignment %q", r.MemberAssignment)
	}
	h.mustState(StateStable)
	h.mustHeartbeat(a, 1, nil)
	h.mustHeartbeat(b, 1, nil)
	// Syncing again in a Stable group is answered at once.
	if r := h.sync(syncReq(0, b, 1, nil)).must(nil); string(r.MemberAssignment) != "B" {
		t.Fatalf("second sync %q", r.MemberAssignment)
	}
}

// Without an initial delay the first member forms a generation alone;
// a second one makes the first rejoin.
func TestSecondMemberRebalances(t *testing.T) {
	h := newHarness(t)
	a := h.memberID("c")
	if r := h.join(joinReq(4, a)).must(nil); r.Generation != 1 || r.LeaderID != a || len(r.Members) != 1 {
		t.Fatalf("first generation %+v", r)
	}
	h.sync(syncReq(4, a, 1, map[string]string{a: "all"})).must(nil)
	b := h.memberID("c")
	h.mustHeartbeat(a, 1, nil) // a member ID handed out does not rebalance
	jb := h.join(joinReq(4, b))
	jb.waiting()
	h.mustState(StatePreparingRebalance)
	h.mustHeartbeat(a, 1, kerr.RebalanceInProgress)
	ja := h.join(joinReq(4, a))
	ra, rb := ja.must(nil), jb.must(nil)
	if ra.Generation != 2 || rb.Generation != 2 || ra.LeaderID != a || len(ra.Members) != 2 {
		t.Fatalf("second generation %+v / %+v", ra, rb)
	}
}

// A third member triggers a rebalance; the old leader stays leader.
func TestThirdMemberJoins(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stable(2)
	c := h.memberID("c")
	jc := h.join(joinReq(4, c))
	jc.waiting()
	for _, id := range ids {
		h.mustHeartbeat(id, gen, kerr.RebalanceInProgress)
	}
	// A sync of the old generation is now refused.
	h.sync(syncReq(4, ids[1], gen, nil)).must(kerr.RebalanceInProgress)
	j1 := h.join(joinReq(4, ids[1]))
	j1.waiting()
	j0 := h.join(joinReq(4, ids[0]))
	for _, j := range []*joinCall{j0, j1, jc} {
		r := j.must(nil)
		if r.Generation != gen+1 || r.LeaderID != ids[0] {
			t.Fatalf("generation %d leader %s, want %d %s", r.Generation, r.LeaderID, gen+1, ids[0])
		}
	}
	if r := j0.resp; len(r.Members) != 3 {
		t.Fatalf("leader got %d members", len(r.Members))
	}
	h.mustHeartbeat(ids[0], gen, kerr.IllegalGeneration)
	h.mustHeartbeat(ids[0], gen+1, nil)
}

// A known non-leader member rejoining a Stable group unchanged gets the
// current generation at once; with changed metadata, or as leader, it
// starts a rebalance.
func TestRejoinStable(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stable(2)
	r := h.join(joinReq(4, ids[1])).must(nil)
	if r.Generation != gen || r.LeaderID != ids[0] || len(r.Members) != 0 {
		t.Fatalf("rejoin %+v", r)
	}
	h.mustState(StateStable)
	// The same member with new metadata: rebalance.
	req := joinReq(4, ids[1])
	req.Protocols[0].Metadata = []byte("new topics")
	j1 := h.join(req)
	j1.waiting()
	h.mustState(StatePreparingRebalance)
	j0 := h.join(joinReq(4, ids[0]))
	r0 := j0.must(nil)
	j1.must(nil)
	if r0.Generation != gen+1 {
		t.Fatalf("generation %d", r0.Generation)
	}
	var meta []byte
	for _, m := range r0.Members {
		if m.MemberID == ids[1] {
			meta = m.ProtocolMetadata
		}
	}
	if !bytes.Equal(meta, []byte("new topics")) {
		t.Fatalf("leader sees metadata %q", meta)
	}
	// In CompletingRebalance an unchanged rejoin is answered at once,
	// the leader's with the member list.
	if r := h.join(joinReq(4, ids[0])).must(nil); r.Generation != gen+1 || len(r.Members) != 2 {
		t.Fatalf("leader rejoin while completing %+v", r)
	}
	h.sync(syncReq(4, ids[0], gen+1, nil)).must(nil)
	// The leader rejoining a Stable group rebalances it.
	h.join(joinReq(4, ids[0])).waiting()
	h.mustState(StatePreparingRebalance)
}

// JoinGroup v0-3 gets its member ID with its generation; v4+ gets
// MEMBER_ID_REQUIRED first, and an ID not used within the session
// timeout lapses.
func TestMemberIDRequired(t *testing.T) {
	for version := range int16(10) {
		h := newHarness(t)
		call := h.join(joinReq(version, ""))
		if version < 4 {
			r := call.must(nil)
			if r.MemberID == "" || r.Generation != 1 || r.LeaderID != r.MemberID {
				t.Fatalf("v%d: %+v", version, r)
			}
			continue
		}
		id := call.must(kerr.MemberIDRequired).MemberID
		if !strings.HasPrefix(id, "client-") {
			t.Fatalf("v%d: member ID %q", version, id)
		}
		if got := h.c.Stats(); got.Generations != 0 {
			t.Fatalf("v%d: %d generations before the member came back", version, got.Generations)
		}
		h.tick(testSession)
		h.join(joinReq(version, id)).must(kerr.UnknownMemberID)
		if got := h.c.Stats().PendingExpired; got != 1 {
			t.Fatalf("v%d: PendingExpired %d", version, got)
		}
	}
}

// A member ID handed out holds a rebalance open until it is used.
func TestPendingMemberHoldsRebalance(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stable(1)
	b, c := h.memberID("b"), h.memberID("c")
	jb := h.join(joinReq(4, b))
	j0 := h.join(joinReq(4, ids[0]))
	jb.waiting()
	j0.waiting()
	jc := h.join(joinReq(4, c))
	for _, j := range []*joinCall{j0, jb, jc} {
		if r := j.must(nil); r.Generation != gen+1 {
			t.Fatalf("generation %d", r.Generation)
		}
	}
	// A pending ID lapsing lets a rebalance complete too.
	d := h.memberID("d")
	h.join(joinReq(4, d)).waiting()
	h.memberID("e") // never comes back
	h.clock.Advance(testSession / 2)
	calls := []*joinCall{h.join(joinReq(4, ids[0])), h.join(joinReq(4, b)), h.join(joinReq(4, c))}
	for _, j := range calls {
		j.waiting()
	}
	h.tick(testSession / 2)
	for _, j := range calls {
		if r := j.must(nil); r.Generation != gen+2 || r.LeaderID != ids[0] {
			t.Fatalf("generation %d leader %s", r.Generation, r.LeaderID)
		}
	}
	if n := len(calls[0].resp.Members); n != 4 {
		t.Fatalf("leader got %d members, want 4", n)
	}
}

func TestJoinErrors(t *testing.T) {
	tests := []struct {
		name string
		req  func() *kmsg.JoinGroupRequest
		want *kerr.Error
	}{
		{"no group", func() *kmsg.JoinGroupRequest { r := joinReq(4, ""); r.Group = ""; return r }, kerr.InvalidGroupID},
		{"session too short", func() *kmsg.JoinGroupRequest { r := joinReq(4, ""); r.SessionTimeoutMillis = 5999; return r }, kerr.InvalidSessionTimeout},
		{"session too long", func() *kmsg.JoinGroupRequest {
			r := joinReq(4, "")
			r.SessionTimeoutMillis = int32(31 * time.Minute / time.Millisecond)
			return r
		}, kerr.InvalidSessionTimeout},
		{"unknown member, unknown group", func() *kmsg.JoinGroupRequest { return joinReq(4, "who") }, kerr.UnknownMemberID},
		{"no protocol type", func() *kmsg.JoinGroupRequest { r := joinReq(4, ""); r.ProtocolType = ""; return r }, kerr.InconsistentGroupProtocol},
		{"no protocols", func() *kmsg.JoinGroupRequest { r := joinReq(4, ""); r.Protocols = nil; return r }, kerr.InconsistentGroupProtocol},
		{"metadata too large", func() *kmsg.JoinGroupRequest {
			r := joinReq(4, "")
			r.Protocols[0].Metadata = make([]byte, DefaultMaxMemberBytes)
			return r
		}, kerr.InvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.join(tt.req()).must(tt.want)
			if h.state() != StateDead {
				t.Fatal("a refused join made a group")
			}
		})
	}
}

func TestJoinErrorsInGroup(t *testing.T) {
	tests := []struct {
		name string
		req  func(ids []string) *kmsg.JoinGroupRequest
		want *kerr.Error
	}{
		{"other protocol type", func([]string) *kmsg.JoinGroupRequest {
			r := joinReq(4, "")
			r.ProtocolType = "connect"
			return r
		}, kerr.InconsistentGroupProtocol},
		{"no common protocol", func([]string) *kmsg.JoinGroupRequest { return joinReq(4, "", "sticky") }, kerr.InconsistentGroupProtocol},
		{"member switching to a protocol others lack", func(ids []string) *kmsg.JoinGroupRequest {
			return joinReq(4, ids[1], "sticky")
		}, kerr.InconsistentGroupProtocol},
		{"unknown member", func([]string) *kmsg.JoinGroupRequest { return joinReq(4, "c-nobody") }, kerr.UnknownMemberID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			ids, gen := h.stable(2)
			h.join(tt.req(ids)).must(tt.want)
			h.mustState(StateStable)
			h.mustHeartbeat(ids[0], gen, nil)
		})
	}
}

// The protocol is the one most members prefer among those all support.
func TestProtocolVote(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.InitialRebalanceDelay = time.Second })
	var calls []*joinCall
	for _, prefs := range [][]string{
		{"sticky", "range", "roundrobin"},
		{"roundrobin", "range"},
		{"roundrobin", "sticky", "range"},
	} {
		calls = append(calls, h.join(joinReq(3, "", prefs...)))
	}
	h.tick(time.Second)
	for _, c := range calls {
		if r := c.must(nil); *r.Protocol != "roundrobin" {
			t.Fatalf("protocol %s, want roundrobin", *r.Protocol)
		}
	}
}

func TestGroupFull(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxMembers = 2 })
	h.stable(1)
	h.memberID("b") // pending IDs count
	h.join(joinReq(4, "")).must(kerr.GroupMaxSizeReached)
	h.join(joinReq(3, "")).must(kerr.GroupMaxSizeReached)
	if got := h.c.Stats().MembersRejected; got != 2 {
		t.Fatalf("MembersRejected %d", got)
	}
}

// Empty groups make room for new ones; groups with members do not.
func TestMaxGroups(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxGroups = 2 })
	join := func(group string) *joinCall {
		r := joinReq(3, "")
		r.Group = group
		return h.join(r)
	}
	leave := func(group, member string) {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group, req.MemberID = group, member
		checkCode(t, "LeaveGroup", h.c.LeaveGroup(req).ErrorCode, nil)
	}
	x := join("x").must(nil)
	join("y").must(nil)
	join("z").must(kerr.CoordinatorNotAvailable)
	leave("x", x.MemberID)
	h.clock.Advance(time.Second)
	join("z").must(nil)
	if st := h.c.Stats(); st.GroupsEvicted != 1 || st.GroupsRejected != 1 {
		t.Fatalf("stats %+v", st)
	}
	var names []string
	for _, g := range h.c.Groups() {
		names = append(names, g.Group)
	}
	if strings.Join(names, ",") != "y,z" {
		t.Fatalf("groups %v", names)
	}
}

// A rebalance completes at the rebalance timeout (the members' longest;
// JoinGroup v0 has none, its session timeout stands in) without the
// members that have not rejoined, even if they heartbeat.
func TestRebalanceTimeout(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stable(2)
	c := h.join(joinReq(0, ""))
	c.waiting()
	j0 := h.join(joinReq(4, ids[0]))
	for range 3 {
		h.tick(testSession / 2)
		h.mustHeartbeat(ids[1], gen, kerr.RebalanceInProgress)
		c.waiting()
	}
	h.tick(testSession / 2) // 20 s: ids[0]'s rebalance timeout
	if r := c.must(nil); r.Generation != gen+1 {
		t.Fatalf("generation %d", r.Generation)
	}
	if r := j0.must(nil); r.LeaderID != ids[0] || len(r.Members) != 2 {
		t.Fatalf("leader %s, %d members", r.LeaderID, len(r.Members))
	}
	h.mustHeartbeat(ids[1], gen, kerr.UnknownMemberID)
	if got := h.c.Stats().NotRejoined; got != 1 {
		t.Fatalf("NotRejoined %d", got)
	}
}

// TestRetainedMetadataBudget: the protocol metadata and assignments held
// by all groups are bounded in bytes (MaxRetainedBytes); a join or a
// leader's sync that would hold more is refused with
// COORDINATOR_NOT_AVAILABLE, counted, and what members leave frees it.
// Without a bound 256 joins of 1 MiB metadata held 260 MiB.
func TestRetainedMetadataBudget(t *testing.T) {
	// Each member also holds 60 bytes of member ID, client ID and host,
	// and each group 10 bytes of name ("g0") and protocol type, and 1 of
	// its chosen protocol.
	h := newHarness(t, func(c *Config) { c.MaxMemberBytes, c.MaxRetainedBytes = 100, 584 })
	join := func(group string, metadata int) *joinCall {
		r := joinReq(3, "")
		r.Group = group
		r.Protocols[0].Name, r.Protocols[0].Metadata = "p", make([]byte, metadata-1)
		return h.join(r)
	}
	var members []*kmsg.JoinGroupResponse
	for i := range 3 {
		members = append(members, join(fmt.Sprintf("g%d", i), 90).must(nil))
	}
	join("g3", 90).must(kerr.CoordinatorNotAvailable)
	join("g3", 30).must(nil) // 584 bytes held: full
	if err := h.c.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	// The leader of g0 assigns: 10 more bytes do not fit.
	sync := syncReq(3, members[0].MemberID, members[0].Generation, map[string]string{members[0].MemberID: "0123456789"})
	sync.Group = "g0"
	h.sync(sync).must(kerr.CoordinatorNotAvailable)
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group, leave.MemberID = "g1", members[1].MemberID
	checkCode(t, "LeaveGroup", h.c.LeaveGroup(leave).ErrorCode, nil)
	h.sync(sync).must(nil)
	if st := h.c.Stats(); st.OverBudget != 2 {
		t.Errorf("OverBudget %d, want 2", st.OverBudget)
	}
	if err := h.c.checkInvariants(); err != nil {
		t.Fatal(err)
	}
}

// A rebalance timeout above MaxRebalanceTimeout is lowered to it: a
// member that asks for 2^31-1 ms and never rejoins holds a rebalance
// only MaxRebalanceTimeout.
func TestRebalanceTimeoutClamped(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRebalanceTimeout = time.Minute })
	ids, _ := h.stable(1)
	big := joinReq(4, ids[0])
	big.RebalanceTimeoutMillis = math.MaxInt32
	h.join(big).must(nil) // same member, new rebalance timeout
	h.mustState(StateCompletingRebalance)
	h.c.mu.Lock()
	got := h.c.groups[testGroup].members[ids[0]].rebalance
	h.c.mu.Unlock()
	if got != time.Minute {
		t.Fatalf("rebalance timeout %v, want clamped to 1m", got)
	}
}

// TestRetainedCountsMemberIdentity: what a member holds besides its
// protocols and assignment (its member ID, instance ID, client ID and
// client host), and each member ID handed out with MEMBER_ID_REQUIRED,
// count against MaxRetainedBytes. A client ID is up to 32 KiB and
// prefixes the member ID made from it: uncounted, 1024 members or
// member IDs handed out in each of 4096 groups could hold 256 GiB.
func TestRetainedCountsMemberIdentity(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxMemberBytes, c.MaxRetainedBytes = 100, 2000 })
	long := strings.Repeat("c", 500)
	join := func(version int16, group string) *kmsg.JoinGroupResponse {
		req := joinReq(version, "")
		req.Group = group
		resp, w := h.c.startJoin(req, long, "127.0.0.1:1")
		if w != nil {
			select {
			case resp = <-w.done:
			default:
				t.Fatalf("join to %s waits", group)
			}
		}
		if err := h.c.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// A member holds its 537-byte member ID, 500-byte client ID,
	// 11-byte host and 15 bytes of protocol: 1063 of the 2000.
	m := join(3, "g0")
	checkCode(t, "first member", m.ErrorCode, nil)
	checkCode(t, "second member", join(3, "g1").ErrorCode, kerr.CoordinatorNotAvailable)
	// A member ID handed out holds its 537 bytes until used or lapsed.
	pending := join(4, "g2")
	checkCode(t, "first member ID", pending.ErrorCode, kerr.MemberIDRequired)
	checkCode(t, "second member ID", join(4, "g3").ErrorCode, kerr.CoordinatorNotAvailable)
	if st := h.c.Stats(); st.OverBudget != 2 {
		t.Errorf("OverBudget %d, want 2", st.OverBudget)
	}
	// Leaving and lapsing give the bytes back but for the names and
	// protocol types of the groups, still in memory though Empty: "g0"
	// and "consumer", "g2" (a member ID handed out sets no type).
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group, leave.MemberID = "g0", m.MemberID
	checkCode(t, "LeaveGroup", h.c.LeaveGroup(leave).ErrorCode, nil)
	h.tick(testSession)
	if err := h.c.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	h.c.mu.Lock()
	held := h.c.retained
	h.c.mu.Unlock()
	if held != 12 {
		t.Fatalf("%d bytes still counted with no member and no member ID handed out, want 12", held)
	}
	checkCode(t, "member after leave", join(3, "g1").ErrorCode, nil)
}
