package groups

import (
	"context"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinRequest is a JoinGroup request checked and copied out of its
// buffer.
type joinRequest struct {
	version      int16
	group        string
	memberID     string
	instanceID   string // "" for none (an empty instance ID counts as none)
	protocolType string
	protocols    []protocol // names distinct, first occurrence kept
	session      time.Duration
	rebalance    time.Duration
	clientID     string
	clientHost   string
}

// JoinGroup handles JoinGroup (all versions, 0 to 9). It returns at once
// with an error, MEMBER_ID_REQUIRED, or the current generation for a
// member that needs no rebalance; otherwise it blocks until the
// rebalance completes, the member is removed or fenced, or ctx ends
// (COORDINATOR_NOT_AVAILABLE). clientID and clientHost are the request
// header's client ID and the connection's remote address.
func (c *Coordinator) JoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest, clientID, clientHost string) *kmsg.JoinGroupResponse {
	return c.JoinGroupWaiting(ctx, req, clientID, clientHost, nil)
}

// JoinGroupWaiting is JoinGroup calling waiting (when not nil) before it
// blocks, once the member is in its group: by then the group holds its
// own copy of what it keeps of req (its strings and protocol metadata),
// so the caller may give back memory it took for them.
func (c *Coordinator) JoinGroupWaiting(ctx context.Context, req *kmsg.JoinGroupRequest, clientID, clientHost string, waiting func()) *kmsg.JoinGroupResponse {
	resp, w := c.startJoin(req, clientID, clientHost)
	if w == nil {
		return resp
	}
	if waiting != nil {
		waiting()
	}
	resp, ok := await(ctx, c, w, joinSlot)
	if !ok {
		resp.ErrorCode = codeUnavailable
	}
	return resp
}

// startJoin does the work of JoinGroup under the lock: it returns either
// the response or the waiter the response will come through.
func (c *Coordinator) startJoin(req *kmsg.JoinGroupRequest, clientID, clientHost string) (*kmsg.JoinGroupResponse, *joinWaiter) {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.MemberID = req.MemberID
	j, code := c.parseJoin(req, clientID, clientHost)
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	g := c.groups[j.group]
	switch {
	case g == nil && j.memberID != "":
		resp.ErrorCode = codeUnknownMember
		return resp, nil
	case g == nil && (j.protocolType == "" || len(j.protocols) == 0):
		resp.ErrorCode = codeInconsistent
		return resp, nil
	case g == nil:
		if !c.retains(int64(len(j.group))+new(group).joinGrowth(j), j.group, "join") {
			resp.ErrorCode = codeUnavailable
			return resp, nil
		}
		var ok bool
		if g, ok = c.addGroup(j.group, now); !ok {
			resp.ErrorCode = codeUnavailable
			return resp, nil
		}
	}
	if !g.supports(j.protocolType, j.protocols) {
		resp.ErrorCode = codeInconsistent
		return resp, nil
	}
	if !c.retains(g.joinGrowth(j), g.name, "join") {
		resp.ErrorCode = codeUnavailable
		return resp, nil
	}
	if j.memberID == "" {
		return c.joinNew(now, g, j, resp)
	}
	return c.joinKnown(now, g, j, resp)
}

// parseJoin checks what can be checked without the group and copies the
// request's strings and bytes.
func (c *Coordinator) parseJoin(req *kmsg.JoinGroupRequest, clientID, clientHost string) (*joinRequest, int16) {
	if req.Group == "" {
		return nil, codeInvalidGroup
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout {
		return nil, codeInvalidSession
	}
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 || rebalance <= 0 {
		rebalance = session
	}
	rebalance = min(rebalance, c.cfg.MaxRebalanceTimeout)
	size := 0
	for _, p := range req.Protocols {
		size += len(p.Name) + len(p.Metadata)
	}
	if size > c.cfg.MaxMemberBytes {
		c.mu.Lock()
		c.stats.TooLarge++
		c.mu.Unlock()
		c.log.Warn("join refused: protocol metadata too large", "group", req.Group, "bytes", size, "max", c.cfg.MaxMemberBytes)
		return nil, codeInvalidRequest
	}
	j := &joinRequest{
		version:      req.Version,
		group:        strings.Clone(req.Group),
		memberID:     strings.Clone(req.MemberID),
		protocolType: strings.Clone(req.ProtocolType),
		session:      session,
		rebalance:    rebalance,
		clientID:     strings.Clone(clientID),
		clientHost:   strings.Clone(clientHost),
		instanceID:   strings.Clone(deref(req.InstanceID)),
	}
	seen := make(map[string]bool, len(req.Protocols))
	for _, p := range req.Protocols {
		if !seen[p.Name] {
			seen[p.Name] = true
			j.protocols = append(j.protocols, protocol{strings.Clone(p.Name), clone(p.Metadata)})
		}
	}
	return j, 0
}

// member makes the member this join describes.
func (j *joinRequest) member(id string, now time.Time, seq uint64) *member {
	return &member{
		id:         id,
		instanceID: j.instanceID,
		clientID:   j.clientID,
		clientHost: j.clientHost,
		protocols:  j.protocols,
		session:    j.session,
		rebalance:  j.rebalance,
		lastSeen:   now,
		seq:        seq,
	}
}

// joinNew handles a join without a member ID: a new member, or a static
// member's instance coming back.
func (c *Coordinator) joinNew(now time.Time, g *group, j *joinRequest, resp *kmsg.JoinGroupResponse) (*kmsg.JoinGroupResponse, *joinWaiter) {
	if id, ok := g.static[j.instanceID]; ok {
		return c.replaceStatic(now, g, g.members[id], j, resp)
	}
	if c.full(g) {
		resp.ErrorCode = codeGroupFull
		return resp, nil
	}
	if j.instanceID != "" {
		resp.MemberID = c.newMemberID(j.instanceID)
		return nil, c.addMember(now, g, resp.MemberID, j, resp)
	}
	resp.MemberID = c.newMemberID(j.clientID)
	if j.version >= 4 {
		c.addPending(g, resp.MemberID, now.Add(j.session))
		resp.ErrorCode = codeMemberIDRequired
		return resp, nil
	}
	return nil, c.addMember(now, g, resp.MemberID, j, resp)
}

// joinKnown handles a join with a member ID: a pending member coming
// back with the ID it was given, or a member rejoining.
func (c *Coordinator) joinKnown(now time.Time, g *group, j *joinRequest, resp *kmsg.JoinGroupResponse) (*kmsg.JoinGroupResponse, *joinWaiter) {
	if code := g.checkInstance(j.instanceID, j.memberID); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	if _, ok := g.pending[j.memberID]; ok {
		c.dropPending(g, j.memberID)
		return nil, c.addMember(now, g, j.memberID, j, resp)
	}
	m := g.members[j.memberID]
	if m == nil {
		resp.ErrorCode = codeUnknownMember
		return resp, nil
	}
	unchanged := m.sameProtocols(j.protocols)
	switch {
	case g.state == StateCompletingRebalance && unchanged,
		g.state == StateStable && unchanged && m.id != g.leader:
		m.lastSeen = now
		c.fillJoin(g, m, resp)
		return resp, nil
	}
	w := c.updateMember(now, g, m, j, resp)
	c.rebalance(g, now, "member rejoined")
	return nil, w
}

// addMember adds a member waiting in JoinGroup and rebalances.
func (c *Coordinator) addMember(now time.Time, g *group, id string, j *joinRequest, resp *kmsg.JoinGroupResponse) *joinWaiter {
	if len(g.members) == 0 {
		c.setProtocolType(g, j.protocolType)
	}
	m := j.member(id, now, g.nextSeq)
	g.nextSeq++
	g.members[id] = m
	c.retained += m.bytes()
	g.addSupport(m, 1)
	if m.instanceID != "" {
		g.static[m.instanceID] = id
	}
	w := newWaiter(m, resp)
	m.join = w
	if g.state == StatePreparingRebalance && now.Before(g.delayUntil) {
		g.delayUntil = minTime(now.Add(c.cfg.InitialRebalanceDelay), g.rebalanceDeadline)
	}
	c.rebalance(g, now, "member joined")
	return w
}

// updateMember records a rejoining member's new join and makes it wait.
// A join it was already waiting in is answered REBALANCE_IN_PROGRESS.
func (c *Coordinator) updateMember(now time.Time, g *group, m *member, j *joinRequest, resp *kmsg.JoinGroupResponse) *joinWaiter {
	g.addSupport(m, -1)
	c.setProtocols(m, j.protocols)
	g.addSupport(m, 1)
	m.session, m.rebalance, m.lastSeen = j.session, j.rebalance, now
	if m.join != nil {
		old := m.join
		m.join = nil
		old.resp.ErrorCode = codeRebalancing
		old.answer()
	}
	w := newWaiter(m, resp)
	m.join = w
	return w
}

// fillJoin writes the current generation into a member's response; the
// leader's also lists every member with its metadata.
func (c *Coordinator) fillJoin(g *group, m *member, resp *kmsg.JoinGroupResponse) {
	resp.ErrorCode = 0
	resp.Generation = g.generation
	resp.ProtocolType = kmsg.StringPtr(g.protocolType)
	resp.Protocol = kmsg.StringPtr(g.protocol)
	resp.LeaderID = g.leader
	resp.MemberID = m.id
	resp.Members = nil
	if m.id != g.leader {
		return
	}
	for _, o := range g.sortedMembers() {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = o.id
		jm.InstanceID = o.instancePtr()
		jm.ProtocolMetadata = o.metadataFor(g.protocol)
		resp.Members = append(resp.Members, jm)
	}
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
