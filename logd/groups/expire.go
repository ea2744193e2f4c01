package groups

import (
	"context"
	"time"
)

// Run calls Tick every Config.TickInterval until ctx ends.
func (c *Coordinator) Run(ctx context.Context) {
	t := time.NewTicker(c.cfg.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.Tick(c.cfg.Now())
		}
	}
}

// Tick applies the deadlines that have passed by now: member IDs handed
// out and not used within their session timeout lapse; members not
// heard from within their session timeout (and not waiting in JoinGroup
// or SyncGroup) are removed; members that have not sent SyncGroup
// within the rebalance timeout after their generation began are
// removed; a rebalance whose timeout has passed completes with the
// members that have rejoined, and one held by the initial delay
// completes once the delay is over.
func (c *Coordinator) Tick(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range c.groups {
		c.tickGroup(g, now)
	}
}

func (c *Coordinator) tickGroup(g *group, now time.Time) {
	forgot, removed := false, false
	for id, lapse := range g.pending {
		if !now.Before(lapse) {
			c.dropPending(g, id)
			c.stats.PendingExpired++
			forgot = true
		}
	}
	for _, m := range g.members {
		if m.join == nil && m.sync == nil && now.Sub(m.lastSeen) >= m.session {
			c.removeMember(g, m, codeUnknownMember)
			c.stats.Expired++
			removed = true
			c.log.Info("member session expired", "group", g.name, "member", m.id, "session", m.session)
		}
	}
	if len(g.pendingSync) > 0 && !now.Before(g.syncDeadline) {
		for id := range g.pendingSync {
			c.removeMember(g, g.members[id], codeUnknownMember)
			c.stats.NotSynced++
			removed = true
			c.log.Info("member removed: no SyncGroup in time", "group", g.name, "member", id)
		}
	}
	if removed || forgot && g.state == StatePreparingRebalance {
		c.rebalance(g, now, "members expired")
	}
	switch {
	case g.state != StatePreparingRebalance:
	case !now.Before(g.rebalanceDeadline):
		c.completeJoin(g, now)
	default:
		c.tryCompleteJoin(g, now)
	}
}
