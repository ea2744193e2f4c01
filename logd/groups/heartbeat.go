package groups

import "github.com/twmb/franz-go/pkg/kmsg"

// Heartbeat handles Heartbeat (all versions, 0 to 4): it keeps a member's
// session alive and tells it, with REBALANCE_IN_PROGRESS, when it must
// join again.
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if req.Group == "" {
		resp.ErrorCode = codeInvalidGroup
		return resp
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[req.Group]
	if g == nil {
		resp.ErrorCode = codeUnknownMember
		return resp
	}
	m, code := g.checkMember(deref(req.InstanceID), req.MemberID, req.Generation)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	m.lastSeen = c.cfg.Now()
	if g.state == StatePreparingRebalance {
		resp.ErrorCode = codeRebalancing
	}
	return resp
}
