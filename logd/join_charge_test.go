package logd

import (
	"testing"

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
