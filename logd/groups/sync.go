package groups

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup handles SyncGroup (all versions, 0 to 5). The leader's call
// carries the assignments: it makes the group Stable and answers every
// member waiting. A member's call during CompletingRebalance waits for
// the leader's, until the group rebalances again, the member is removed,
// or ctx ends (COORDINATOR_NOT_AVAILABLE). In a Stable group it is
// answered at once with the member's assignment.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	resp, w := c.startSync(req)
	if w == nil {
		return resp
	}
	resp, ok := await(ctx, c, w, syncSlot)
	if !ok {
		resp.ErrorCode = codeUnavailable
	}
	return resp
}

// startSync does the work of SyncGroup under the lock: it returns either
// the response or the waiter the response will come through.
func (c *Coordinator) startSync(req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, *syncWaiter) {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	if req.Group == "" {
		resp.ErrorCode = codeInvalidGroup
		return resp, nil
	}
	assignments, ok := c.parseAssignments(req)
	if !ok {
		resp.ErrorCode = codeInvalidRequest
		return resp, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[req.Group]
	if g == nil {
		resp.ErrorCode = codeUnknownMember
		return resp, nil
	}
	m, code := g.checkMember(deref(req.InstanceID), req.MemberID, req.Generation)
	switch {
	case code != 0:
		resp.ErrorCode = code
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Protocol != nil && *req.Protocol != g.protocol:
		resp.ErrorCode = codeInconsistent
	case g.state == StatePreparingRebalance:
		resp.ErrorCode = codeRebalancing
	}
	if resp.ErrorCode != 0 {
		return resp, nil
	}
	m.lastSeen = c.cfg.Now()
	delete(g.pendingSync, m.id)
	if g.state == StateStable {
		fillSync(g, m, resp)
		return resp, nil
	}
	if m.id == g.leader && !c.retains(g.syncGrowth(assignments), g.name, "sync") {
		resp.ErrorCode = codeUnavailable
		return resp, nil
	}
	if old := m.sync; old != nil {
		m.sync = nil
		old.resp.ErrorCode = codeRebalancing
		old.answer()
	}
	w := newWaiter(m, resp)
	m.sync = w
	if m.id == g.leader {
		c.completeSync(g, assignments)
	}
	return nil, w
}

// parseAssignments copies the assignments out of the request, refusing
// any larger than MaxMemberBytes. A member named twice gets the last.
func (c *Coordinator) parseAssignments(req *kmsg.SyncGroupRequest) (map[string][]byte, bool) {
	assignments := make(map[string][]byte, len(req.GroupAssignment))
	for _, a := range req.GroupAssignment {
		if len(a.MemberAssignment) > c.cfg.MaxMemberBytes {
			c.mu.Lock()
			c.stats.TooLarge++
			c.mu.Unlock()
			c.log.Warn("sync refused: assignment too large", "group", req.Group, "member", a.MemberID,
				"bytes", len(a.MemberAssignment), "max", c.cfg.MaxMemberBytes)
			return nil, false
		}
		assignments[strings.Clone(a.MemberID)] = clone(a.MemberAssignment)
	}
	return assignments, true
}

func fillSync(g *group, m *member, resp *kmsg.SyncGroupResponse) {
	resp.ErrorCode = 0
	resp.ProtocolType = kmsg.StringPtr(g.protocolType)
	resp.Protocol = kmsg.StringPtr(g.protocol)
	resp.MemberAssignment = m.assignment
}

// deref reads an optional string; null counts as empty.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
