package logd

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestJoinGroupWaitGivesBackMetadataCharge: JoinGroups waiting for their
// group to form hold, of their decode charge, only what their decoded
// structs take, not their protocol metadata at its size, and not their
// frames: the coordinator keeps its own copy of the metadata, bounded
// over all groups by MaxGroupBytes. Members of 256 KiB metadata each
// held 273 KiB of decode charge and a 512 KiB frame while they waited;
// on the default budgets 2000 members of 100 KiB filled both, so no
// other request could be read or decoded.
func TestJoinGroupWaitGivesBackMetadataCharge(t *testing.T) {
	const (
		members  = 3
		metadata = 256 << 10
	)
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.MaxRequestBytes = 1 << 20
		c.MaxInFlightRequestBytes = 4 << 20
	})
	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(3) // no member id required: a member waits at its first join
	join.Group, join.ProtocolType = "wait", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10_000, 60_000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: make([]byte, metadata)}}
	for i := range members {
		c := dial(t, ts.addr)
		if err := writeRequestCorr(c, 1, kmsg.JoinGroup.Int16(), join.GetVersion(), join.AppendTo(nil)); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the member waiting in its group", func() bool {
			d := kmsg.NewPtrDescribeGroupsRequest()
			d.Groups = []string{"wait"}
			g := ts.groups.DescribeGroups(d).Groups[0]
			return len(g.Members) == i+1
		})
	}
	// (The first is answered at once; the others wait for it to join
	// again.) What the decoded requests take: the header, the protocol,
	// its name.
	bound := int64(members * (requestCost + groupElementCost + 64))
	if used := ts.decodeMem.stats().used; used > bound {
		t.Errorf("%d members of %d KiB metadata joined (those not answered wait for their group): %d bytes of decode charge held, want at most %d", members, metadata>>10, used, bound)
	}
	if used := ts.reqMem.stats().used; used > 0 {
		t.Errorf("%d members of %d KiB metadata joined (those not answered wait for their group): %d bytes of frames held", members, metadata>>10, used)
	}
}

// TestJoinGroupWaitFrameReused: a JoinGroup waiting for its group gives
// its frame back to the pool, where the next requests' frames of its
// size class are read into it. The member's protocol metadata, kept by
// its group and answered to the leader, is unchanged by them, byte for
// byte, as are both members' answers: nothing the group keeps, and
// nothing answered, points into the frame once it is given back. In a
// flexible version the request's protocols and itself carry unknown
// tags (which kmsg leaves in the frame).
func TestJoinGroupWaitFrameReused(t *testing.T) {
	ts := startServer(t, t.TempDir())
	for _, v := range []int16{3, 5, 7} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			group := fmt.Sprintf("reused-%d", v)
			metaA := bytes.Repeat([]byte{0xa1}, 5000)
			metaB := make([]byte, 5000)
			for i := range metaB {
				metaB[i] = byte(i)
			}
			join := func(c net.Conn, memberID string, meta []byte) {
				t.Helper()
				req := kmsg.NewPtrJoinGroupRequest()
				req.SetVersion(v)
				req.Group, req.MemberID, req.ProtocolType = group, memberID, "consumer"
				req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 60_000
				req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta}}
				if req.IsFlexible() {
					req.Protocols[0].UnknownTags.Set(99, bytes.Repeat([]byte{0xc3}, 100))
					req.UnknownTags.Set(98, bytes.Repeat([]byte{0xc4}, 100))
				}
				body := req.AppendTo(nil)
				if req.IsFlexible() {
					body = append([]byte{0}, body...) // the header's tags
				}
				if err := writeRequestCorr(c, 1, kmsg.JoinGroup.Int16(), v, body); err != nil {
					t.Fatal(err)
				}
			}
			answer := func(c net.Conn) *kmsg.JoinGroupResponse {
				t.Helper()
				b, err := readFrame(c)
				if err != nil {
					t.Fatal(err)
				}
				resp := kmsg.NewPtrJoinGroupResponse()
				resp.SetVersion(v)
				b = b[4:]
				if resp.IsFlexible() {
					b = b[1:]
				}
				if err := resp.ReadFrom(b); err != nil {
					t.Fatal(err)
				}
				return resp
			}
			// joined: a member's id, after MEMBER_ID_REQUIRED (v4+).
			joined := func(c net.Conn, meta []byte) string {
				t.Helper()
				if v < 4 {
					return ""
				}
				join(c, "", meta)
				resp := answer(c)
				if resp.ErrorCode != kerr.MemberIDRequired.Code {
					t.Fatalf("first join: error %d, want MEMBER_ID_REQUIRED", resp.ErrorCode)
				}
				return resp.MemberID
			}
			ca, cb := dial(t, ts.addr), dial(t, ts.addr)
			join(ca, joined(ca, metaA), metaA)
			first := answer(ca) // alone: answered at once, its leader
			if first.ErrorCode != 0 {
				t.Fatalf("A's join: error %d", first.ErrorCode)
			}
			idA := first.MemberID
			join(cb, joined(cb, metaB), metaB)
			waitUntil(t, "B waiting in its group, its frame given back", func() bool {
				d := kmsg.NewPtrDescribeGroupsRequest()
				d.Groups = []string{group}
				return len(ts.groups.DescribeGroups(d).Groups[0].Members) == 2 && ts.reqMem.stats().used == 0
			})
			// Requests of B's frame's size class, read into pooled frames:
			// B's first of them.
			cf := dial(t, ts.addr)
			for i := range 8 {
				d := kmsg.NewPtrDescribeGroupsRequest()
				d.Groups = []string{strings.Repeat(string(rune('\xe0'+i)), 2900+100*i)}
				if _, err := rawRequest(t, cf, kmsg.DescribeGroups.Int16(), 0, d.AppendTo(nil)); err != nil {
					t.Fatal(err)
				}
			}
			join(ca, idA, metaA) // A rejoins: the generation forms
			leader, follower := answer(ca), answer(cb)
			if leader.ErrorCode != 0 || follower.ErrorCode != 0 {
				t.Fatalf("joins answered with errors %d and %d", leader.ErrorCode, follower.ErrorCode)
			}
			idB := follower.MemberID
			if idB == "" || idB == idA || leader.LeaderID != idA || follower.LeaderID != idA ||
				deref(follower.Protocol) != "range" || v >= 7 && deref(follower.ProtocolType) != "consumer" || follower.Generation != leader.Generation || len(follower.Members) != 0 {
				t.Fatalf("B's answer: member %q leader %q protocol %q/%q generation %d (A's %d), %d members; A is %q",
					idB, follower.LeaderID, deref(follower.ProtocolType), deref(follower.Protocol), follower.Generation, leader.Generation, len(follower.Members), idA)
			}
			want := map[string][]byte{idA: metaA, idB: metaB}
			if len(leader.Members) != 2 {
				t.Fatalf("leader's answer lists %d members, want 2", len(leader.Members))
			}
			for _, m := range leader.Members {
				if !bytes.Equal(m.ProtocolMetadata, want[m.MemberID]) {
					t.Errorf("leader's answer: member %q's metadata %x..., want %x...", m.MemberID, m.ProtocolMetadata[:min(16, len(m.ProtocolMetadata))], want[m.MemberID][:min(16, len(want[m.MemberID]))])
				}
			}
			// Synced, the group is Stable: described, its members'
			// metadata as kept.
			sync := func(c net.Conn, id string, assign []kmsg.SyncGroupRequestGroupAssignment) {
				t.Helper()
				req := kmsg.NewPtrSyncGroupRequest()
				req.SetVersion(3)
				req.Group, req.MemberID, req.Generation, req.GroupAssignment = group, id, leader.Generation, assign
				if err := writeRequestCorr(c, 2, kmsg.SyncGroup.Int16(), 3, req.AppendTo(nil)); err != nil {
					t.Fatal(err)
				}
			}
			sync(cb, idB, nil)
			sync(ca, idA, []kmsg.SyncGroupRequestGroupAssignment{{MemberID: idA, MemberAssignment: []byte{1}}, {MemberID: idB, MemberAssignment: []byte{2}}})
			for _, c := range []net.Conn{ca, cb} {
				if _, err := readFrame(c); err != nil {
					t.Fatal(err)
				}
			}
			d := kmsg.NewPtrDescribeGroupsRequest()
			d.Groups = []string{group}
			g := ts.groups.DescribeGroups(d).Groups[0]
			if g.State != "Stable" || len(g.Members) != 2 {
				t.Fatalf("group %s, %d members, want Stable, 2", g.State, len(g.Members))
			}
			for _, m := range g.Members {
				if !bytes.Equal(m.ProtocolMetadata, want[m.MemberID]) {
					t.Errorf("group's member %q's metadata %x..., want %x...", m.MemberID, m.ProtocolMetadata[:min(16, len(m.ProtocolMetadata))], want[m.MemberID][:min(16, len(want[m.MemberID]))])
				}
			}
			// A third member waits, its frame and part of its charge given
			// back, and leaves by closing its connection: the rest of its
			// charge comes back, once.
			cc, err := net.Dial("tcp", ts.addr)
			if err != nil {
				t.Fatal(err)
			}
			join(cc, joined(cc, metaB), metaB)
			waitUntil(t, "C waiting in its group", func() bool {
				return len(ts.groups.DescribeGroups(d).Groups[0].Members) == 3 && ts.reqMem.stats().used == 0
			})
			cc.Close()
			waitUntil(t, "C's charge given back", func() bool { return ts.decodeMem.stats().used <= 0 })
			if used := ts.decodeMem.stats().used; used != 0 {
				t.Fatalf("members answered or gone: %d bytes of decode charge held", used)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
