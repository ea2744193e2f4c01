package groups

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rebalance reacts to a member joining, rejoining or going: a group with
// members starts a rebalance, or, when one is under way, checks whether
// it can now complete (which a member ID handed out lapsing or being
// given back may also allow).
func (c *Coordinator) rebalance(g *group, now time.Time, reason string) {
	switch {
	case g.state == StatePreparingRebalance:
		c.tryCompleteJoin(g, now)
	case g.state != StateEmpty || len(g.members) > 0:
		c.prepareRebalance(g, now, reason)
	}
}

// prepareRebalance moves the group to PreparingRebalance: members waiting
// in SyncGroup are told REBALANCE_IN_PROGRESS, the others learn it from
// their next heartbeat, and the group waits for everyone to join again.
func (c *Coordinator) prepareRebalance(g *group, now time.Time, reason string) {
	for _, m := range g.members {
		c.setAssignment(m, nil)
		if w := m.sync; w != nil {
			m.sync = nil
			w.resp.ErrorCode = codeRebalancing
			w.answer()
		}
	}
	fromEmpty := g.state == StateEmpty
	g.state = StatePreparingRebalance
	g.pendingSync = nil
	g.syncDeadline = time.Time{}
	g.rebalanceDeadline = now.Add(g.rebalanceTimeout())
	g.delayUntil = time.Time{}
	if fromEmpty && c.cfg.InitialRebalanceDelay > 0 {
		g.delayUntil = minTime(now.Add(c.cfg.InitialRebalanceDelay), g.rebalanceDeadline)
	}
	c.stats.Rebalances++
	c.log.Info("group rebalancing", "group", g.name, "generation", g.generation, "reason", reason, "members", len(g.members))
	c.tryCompleteJoin(g, now)
}

// tryCompleteJoin completes the rebalance once every member is waiting
// in JoinGroup, no member ID handed out is still to come back, and the
// initial delay is over; or at once when no member is left.
func (c *Coordinator) tryCompleteJoin(g *group, now time.Time) {
	if len(g.members) == 0 ||
		g.awaitingJoin() == len(g.members) && len(g.pending) == 0 && !now.Before(g.delayUntil) {
		c.completeJoin(g, now)
	}
}

// completeJoin ends PreparingRebalance: dynamic members that have not
// rejoined are removed, and the next generation begins with those that
// have. When only static members that have not rejoined are left, the
// group waits another rebalance timeout for them (or for their sessions
// to lapse).
func (c *Coordinator) completeJoin(g *group, now time.Time) {
	for _, m := range g.members {
		if m.join == nil && m.instanceID == "" {
			c.removeMember(g, m, codeUnknownMember)
			c.stats.NotRejoined++
		}
	}
	joined := g.awaitingJoin()
	if joined == 0 && len(g.members) > 0 {
		g.rebalanceDeadline = now.Add(g.rebalanceTimeout())
		return
	}
	g.generation = nextGeneration(g.generation)
	g.delayUntil = time.Time{}
	c.stats.Generations++
	if len(g.members) == 0 {
		g.state = StateEmpty
		c.setProtocol(g, "")
		g.leader = ""
		g.emptySince = now
		c.log.Info("group empty", "group", g.name, "generation", g.generation)
		return
	}
	c.setProtocol(g, g.selectProtocol())
	members := g.sortedMembers()
	if l := g.members[g.leader]; l == nil || l.join == nil {
		for _, m := range members {
			if m.join != nil {
				g.leader = m.id
				break
			}
		}
	}
	g.state = StateCompletingRebalance
	g.pendingSync = make(map[string]struct{}, len(members))
	g.syncDeadline = now.Add(g.rebalanceTimeout())
	for _, m := range members {
		g.pendingSync[m.id] = struct{}{}
		m.lastSeen = now
		if w := m.join; w != nil {
			m.join = nil
			c.fillJoin(g, m, w.resp)
			w.answer()
		}
	}
	c.log.Info("group joined", "group", g.name, "generation", g.generation, "protocol", g.protocol,
		"leader", g.leader, "members", len(members), "rejoined", joined)
}

// completeSync takes the leader's assignments, makes the group Stable,
// and answers every member waiting in SyncGroup. Members the leader left
// out get an empty assignment.
func (c *Coordinator) completeSync(g *group, assignments map[string][]byte) {
	for _, m := range g.members {
		a := assignments[m.id]
		if len(a) == 0 && g.protocolType == consumerProtocol {
			a = emptyConsumerAssignment
		}
		c.setAssignment(m, a)
	}
	g.state = StateStable
	for _, m := range g.members {
		if w := m.sync; w != nil {
			m.sync = nil
			fillSync(g, m, w.resp)
			w.answer()
		}
	}
	c.log.Info("group stable", "group", g.name, "generation", g.generation)
}

// removeMember takes a member out of the group without rebalancing
// (the caller does); a JoinGroup or SyncGroup it is waiting in is
// answered with code.
func (c *Coordinator) removeMember(g *group, m *member, code int16) {
	if w := m.join; w != nil {
		m.join = nil
		w.resp.ErrorCode = code
		w.resp.MemberID = m.id
		w.answer()
	}
	if w := m.sync; w != nil {
		m.sync = nil
		w.resp.ErrorCode = code
		w.answer()
	}
	g.addSupport(m, -1)
	delete(g.members, m.id)
	c.retained -= m.bytes()
	delete(g.pendingSync, m.id)
	if m.instanceID != "" && g.static[m.instanceID] == m.id {
		delete(g.static, m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
	}
}

// consumerProtocol is the protocol type of Kafka consumers, whose
// assignments have a known format.
const consumerProtocol = "consumer"

// emptyConsumerAssignment is an encoded ConsumerMemberAssignment with no
// partitions. Kafka passes the leader's empty bytes on as they are, but
// some consumers cannot decode zero bytes, so members of a "consumer"
// group the leader gave nothing get this instead.
var emptyConsumerAssignment = new(kmsg.ConsumerMemberAssignment).AppendTo(nil)
