package groups

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// replaceStatic handles a join without a member ID from a known static
// instance: the instance has restarted. A new member ID takes the old
// one's place (its join order, leadership and assignment); the old ID is
// fenced, and calls it is waiting in are answered FENCED_INSTANCE_ID. A
// Stable group whose chosen protocol would not change gets the current
// generation back at once (a replaced leader is told to skip
// assignment); otherwise the group rebalances.
func (c *Coordinator) replaceStatic(now time.Time, g *group, old *member, j *joinRequest, resp *kmsg.JoinGroupResponse) (*kmsg.JoinGroupResponse, *joinWaiter) {
	m := j.member(c.newMemberID(j.instanceID), now, old.seq)
	m.assignment = old.assignment
	wasLeader := g.leader == old.id
	_, syncDue := g.pendingSync[old.id]
	c.removeMember(g, old, codeFenced)
	g.members[m.id] = m
	c.retained += m.bytes()
	g.addSupport(m, 1)
	g.static[m.instanceID] = m.id
	if wasLeader {
		g.leader = m.id
	}
	if syncDue {
		g.pendingSync[m.id] = struct{}{}
	}
	c.stats.Fenced++
	c.log.Info("static member replaced", "group", g.name, "instance", m.instanceID, "old", old.id, "new", m.id)
	resp.MemberID = m.id
	if g.state == StateStable && g.selectProtocol() == g.protocol {
		c.fillJoin(g, m, resp)
		resp.SkipAssignment = wasLeader
		return resp, nil
	}
	w := newWaiter(m, resp)
	m.join = w
	c.rebalance(g, now, "static member replaced")
	return nil, w
}
