package groups

import "github.com/twmb/franz-go/pkg/kmsg"

// LeaveGroup handles LeaveGroup: one member in v0-2, a list of members
// (by member ID, or by instance ID for static members) in v3+. Each
// leaving member is removed (a call it is waiting in is answered
// UNKNOWN_MEMBER_ID) and the group rebalances, or becomes Empty when no
// member is left. Unknown members get UNKNOWN_MEMBER_ID, a member ID
// that does not match its instance ID FENCED_INSTANCE_ID; in v0-2 that
// is the response's error.
func (c *Coordinator) LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if req.Group == "" {
		resp.ErrorCode = codeInvalidGroup
		return resp
	}
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[req.Group]
	removed, forgot := false, false
	for _, lm := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		rm.ErrorCode = codeUnknownMember
		if g != nil {
			var wasMember bool
			rm.ErrorCode, wasMember = c.leave(g, lm)
			removed = removed || wasMember
			forgot = forgot || rm.ErrorCode == 0 && !wasMember
		}
		resp.Members = append(resp.Members, rm)
	}
	if removed || forgot && g.state == StatePreparingRebalance {
		c.rebalance(g, c.cfg.Now(), "member left")
	}
	if req.Version < 3 {
		resp.ErrorCode = resp.Members[0].ErrorCode
		resp.Members = nil
	}
	return resp
}

// leave removes one leaving member, or forgets a member ID handed out
// and not yet used. It returns the error code, and whether a member was
// removed.
func (c *Coordinator) leave(g *group, lm kmsg.LeaveGroupRequestMember) (int16, bool) {
	id := lm.MemberID
	if inst := deref(lm.InstanceID); inst != "" {
		known, ok := g.static[inst]
		switch {
		case !ok:
			return codeUnknownMember, false
		case id != "" && id != known:
			return codeFenced, false
		}
		id = known
	}
	if _, ok := g.pending[id]; ok {
		c.dropPending(g, id)
		return 0, false
	}
	m := g.members[id]
	if m == nil {
		return codeUnknownMember, false
	}
	c.removeMember(g, m, codeUnknownMember)
	c.stats.Left++
	c.log.Info("member left", "group", g.name, "member", id)
	return 0, true
}
