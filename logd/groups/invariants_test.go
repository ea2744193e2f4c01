package groups

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkInvariants checks what must hold of every group between calls.
func (c *Coordinator) checkInvariants() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.groups) > c.cfg.MaxGroups {
		return fmt.Errorf("%d groups, max %d", len(c.groups), c.cfg.MaxGroups)
	}
	var held, chosen int64
	for name, g := range c.groups {
		if err := c.checkGroup(g); err != nil {
			return fmt.Errorf("group %s (%v, generation %d): %w", name, g.state, g.generation, err)
		}
		held += int64(len(name) + len(g.protocolType) + len(g.protocol))
		chosen += int64(len(g.protocol))
		for _, m := range g.members {
			held += int64(len(m.id) + len(m.instanceID) + len(m.clientID) + len(m.clientHost) + len(m.assignment))
			for _, p := range m.protocols {
				held += int64(len(p.name) + len(p.metadata))
			}
		}
		for id := range g.pending {
			held += int64(len(id))
		}
	}
	// Chosen protocols are counted but not refused (setProtocol): only
	// they may take the count past the budget.
	if held != c.retained || held-chosen > int64(c.cfg.MaxRetainedBytes) {
		return fmt.Errorf("groups, members and member IDs handed out hold %d bytes (%d of chosen protocols), counted %d, max %d",
			held, chosen, c.retained, c.cfg.MaxRetainedBytes)
	}
	return nil
}

func (c *Coordinator) checkGroup(g *group) error {
	switch {
	case len(g.members)+len(g.pending) > c.cfg.MaxMembers:
		return fmt.Errorf("%d members and %d pending, max %d", len(g.members), len(g.pending), c.cfg.MaxMembers)
	case (len(g.members) == 0) != (g.state == StateEmpty):
		return fmt.Errorf("%d members", len(g.members))
	case g.state == StateDead || g.generation < 0:
		return fmt.Errorf("bad state or generation")
	case g.state == StateEmpty && (g.leader != "" || g.protocol != ""):
		return fmt.Errorf("empty group with leader %q protocol %q", g.leader, g.protocol)
	case g.pendingSync != nil && g.state != StateCompletingRebalance && g.state != StateStable:
		return fmt.Errorf("pending syncs outside a generation")
	}
	support := make(map[string]int)
	for id, m := range g.members {
		if _, ok := g.pending[id]; ok {
			return fmt.Errorf("member %s also pending", id)
		}
		if m.id != id {
			return fmt.Errorf("member %s filed as %s", m.id, id)
		}
		if m.join != nil && (g.state != StatePreparingRebalance || m.join.m != m) {
			return fmt.Errorf("member %s waits in JoinGroup", id)
		}
		if m.sync != nil && (g.state != StateCompletingRebalance || m.sync.m != m) {
			return fmt.Errorf("member %s waits in SyncGroup", id)
		}
		if m.instanceID != "" && g.static[m.instanceID] != id {
			return fmt.Errorf("member %s: instance %s maps to %s", id, m.instanceID, g.static[m.instanceID])
		}
		names := make(map[string]bool)
		for _, p := range m.protocols {
			if g.protocol != "" && unsafe.StringData(p.name) == unsafe.StringData(g.protocol) {
				return fmt.Errorf("protocol %.20q shares the bytes of member %.60s's", g.protocol, id)
			}
			if names[p.name] {
				return fmt.Errorf("member %s lists %s twice", id, p.name)
			}
			names[p.name] = true
			support[p.name]++
		}
	}
	if fmt.Sprint(support) != fmt.Sprint(g.support) {
		return fmt.Errorf("support %v, counted %v", g.support, support)
	}
	for inst, id := range g.static {
		if m := g.members[id]; m == nil || m.instanceID != inst {
			return fmt.Errorf("instance %s maps to %s, not its member", inst, id)
		}
	}
	for id := range g.pendingSync {
		if g.members[id] == nil {
			return fmt.Errorf("pending sync of non-member %s", id)
		}
	}
	if g.state == StateCompletingRebalance || g.state == StateStable {
		if g.members[g.leader] == nil {
			return fmt.Errorf("leader %q is not a member", g.leader)
		}
		if g.support[g.protocol] != len(g.members) {
			return fmt.Errorf("protocol %q not supported by every member", g.protocol)
		}
	}
	return nil
}

// generations records what each generation's JoinGroup answers said,
// and fails when two answers of one generation disagree on its leader
// or protocol, or a leader's member list lacks a member.
type generations struct {
	mu   sync.Mutex
	seen map[string]map[int32]string
}

func (gs *generations) record(group string, r *kmsg.JoinGroupResponse) error {
	if r.ErrorCode != 0 {
		return nil
	}
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.seen == nil {
		gs.seen = make(map[string]map[int32]string)
	}
	if gs.seen[group] == nil {
		gs.seen[group] = make(map[int32]string)
	}
	key := r.LeaderID + "/" + deref(r.Protocol)
	if prev, ok := gs.seen[group][r.Generation]; ok && prev != key {
		return fmt.Errorf("group %s generation %d: leader/protocol %s and %s", group, r.Generation, prev, key)
	}
	gs.seen[group][r.Generation] = key
	if r.MemberID != r.LeaderID {
		return nil
	}
	for _, m := range r.Members {
		if m.MemberID == r.MemberID {
			return nil
		}
	}
	return fmt.Errorf("group %s generation %d: leader %s not among its members", group, r.Generation, r.LeaderID)
}
