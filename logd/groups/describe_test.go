package groups

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeReq(version int16, groups ...string) *kmsg.DescribeGroupsRequest {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = version
	req.Groups = groups
	return req
}

func TestDescribeGroups(t *testing.T) {
	h := newHarness(t)
	ids, _ := h.stable(2)
	if err := h.store.Commit("stored", []Committed{{"t", 0, 1, ""}}); err != nil {
		t.Fatal(err)
	}
	resp := h.c.DescribeGroups(describeReq(5, testGroup, "stored", "none", ""))
	g := resp.Groups[0]
	if g.State != "Stable" || g.ProtocolType != consumerProtocol || g.Protocol != "range" || len(g.Members) != 2 {
		t.Fatalf("%+v", g)
	}
	for i, m := range g.Members {
		if m.MemberID != ids[i] || m.ClientID != "client" || m.ClientHost != "127.0.0.1:1" ||
			string(m.ProtocolMetadata) != "meta:range" || string(m.MemberAssignment) != "a:"+ids[i] {
			t.Fatalf("member %d: %+v", i, m)
		}
	}
	for i, want := range []struct {
		state string
		code  int16
	}{{"Empty", 0}, {"Dead", 0}, {"", kerr.InvalidGroupID.Code}} {
		if g := resp.Groups[i+1]; g.State != want.state || g.ErrorCode != want.code {
			t.Fatalf("group %q: %q %d, want %q %d", g.Group, g.State, g.ErrorCode, want.state, want.code)
		}
	}
	if g := h.c.DescribeGroups(describeReq(6, "none")).Groups[0]; g.ErrorCode != kerr.GroupIDNotFound.Code || g.State != "Dead" {
		t.Fatalf("v6 unknown group: %+v", g)
	}

	// While rebalancing, no protocol, metadata or assignments are shown.
	h.join(joinReq(4, ids[1])).must(nil)
	h.join(joinReq(4, ids[0])).waiting()
	g = h.c.DescribeGroups(describeReq(5, testGroup)).Groups[0]
	if g.State != "PreparingRebalance" || g.Protocol != "" || g.Members[0].MemberAssignment != nil || g.Members[0].ProtocolMetadata != nil {
		t.Fatalf("%+v", g)
	}
}

func TestListGroups(t *testing.T) {
	h := newHarness(t)
	h.stable(1)
	for _, name := range []string{"a", "z"} {
		r := joinReq(3, "")
		r.Group = name
		h.join(r).must(nil)
	}
	if err := h.store.Commit("stored", []Committed{{"t", 0, 1, ""}}); err != nil {
		t.Fatal(err)
	}
	list := func(version int16, states, types []string) string {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version, req.StatesFilter, req.TypesFilter = version, states, types
		var out []string
		for _, g := range h.c.ListGroups(req).Groups {
			out = append(out, fmt.Sprintf("%s:%s:%s", g.Group, g.GroupState, g.ProtocolType))
		}
		return strings.Join(out, " ")
	}
	for _, tt := range []struct {
		states, types []string
		want          string
	}{
		{nil, nil, "a:CompletingRebalance:consumer g:Stable:consumer stored:Empty: z:CompletingRebalance:consumer"},
		{[]string{"stable", "Empty"}, nil, "g:Stable:consumer stored:Empty:"},
		{nil, []string{"Classic"}, "a:CompletingRebalance:consumer g:Stable:consumer stored:Empty: z:CompletingRebalance:consumer"},
		{nil, []string{"consumer"}, ""},
	} {
		if got := list(5, tt.states, tt.types); got != tt.want {
			t.Fatalf("states %v types %v:\ngot  %s\nwant %s", tt.states, tt.types, got, tt.want)
		}
	}
	infos := h.c.Groups()
	if len(infos) != 4 || infos[1].Group != testGroup || infos[1].Generation != 1 || infos[1].Members != 1 ||
		infos[2].Group != "stored" || len(infos[2].Committed) != 1 {
		t.Fatalf("%+v", infos)
	}
}

// TestDescribeGroupsRepeatedNameAnsweredOnce: a group named several times
// in one DescribeGroups is described once, where first named. Kafka
// describes it at every mention, but a group's description carries its
// members' metadata and assignments (up to MaxMemberBytes each): a
// 30 KB request naming a group 10000 times would be answered with 10000
// copies of them. The answer is bounded by what the groups hold instead,
// as logd's Fetch answers a repeated partition once.
func TestDescribeGroupsRepeatedNameAnsweredOnce(t *testing.T) {
	h := newHarness(t)
	h.stable(2)
	names := []string{testGroup, "none", testGroup}
	for range 10000 {
		names = append(names, testGroup, "none")
	}
	resp := h.c.DescribeGroups(describeReq(5, names...))
	var got []string
	for _, g := range resp.Groups {
		got = append(got, g.Group)
	}
	if len(got) != 2 || got[0] != testGroup || got[1] != "none" || len(resp.Groups[0].Members) != 2 {
		t.Fatalf("a DescribeGroups naming %s and none 10001 times each was answered with %d descriptions (the first %q), want each group once", testGroup, len(got), got[:min(len(got), 3)])
	}
}
