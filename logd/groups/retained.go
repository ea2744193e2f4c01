package groups

import (
	"slices"
	"strings"
	"time"
)

// The byte budget of group metadata held in memory: the names and
// protocol types of the groups (held while a group is in memory, Empty
// ones too: up to MaxGroups of them, each name as long as a request
// allows), members' protocol names and metadata from JoinGroup and their
// assignments from SyncGroup, their member IDs, instance IDs, client
// IDs and client hosts (a client ID is up to 32 KiB, and prefixes the
// member ID made from it), and the member IDs handed out with
// MEMBER_ID_REQUIRED, each kept for up to a session timeout, and the
// protocol chosen for each group's generation (setProtocol). c.retained
// counts them; a join or sync that would take it past
// Config.MaxRetainedBytes evicts Empty groups to make room
// (evictForBytes), or, when they are not enough, is refused with
// COORDINATOR_NOT_AVAILABLE, which clients retry. A join refused so
// does not make its group.

// bytes is what g holds of the budget besides its members and the
// member IDs it handed out: its name, protocol type and the protocol
// chosen for its generation.
func (g *group) bytes() int64 { return int64(len(g.name) + len(g.protocolType) + len(g.protocol)) }

// setProtocolType gives g the protocol type of its first member,
// accounting for it.
func (c *Coordinator) setProtocolType(g *group, t string) {
	c.retained += int64(len(t) - len(g.protocolType))
	g.protocolType = t
}

// setProtocol makes p the protocol of g's generation, accounting for
// it. g keeps its own copy: a name sharing the bytes of the member's
// that it came from kept them in memory after the member left and gave
// them back to the budget, one name (up to MaxMemberBytes) per group
// held outside it until the next generation.
//
// The growth is not checked against the budget: the protocol is chosen
// as a join phase ends, when refusing would fail a rebalance every
// member has already joined. It is bounded by what is already counted
// (the name is one of a member's, so at most one of its members' names
// per group), and while it takes the count past MaxRetainedBytes, joins
// and syncs that add bytes are refused until it is back under.
func (c *Coordinator) setProtocol(g *group, p string) {
	if p == g.protocol {
		return
	}
	c.retained += int64(len(p) - len(g.protocol))
	g.protocol = strings.Clone(p)
}

// typeGrowth is what a join that adds a member adds to the budget with
// the group's protocol type: the first member of a group sets it.
func (g *group) typeGrowth(j *joinRequest) int64 {
	if len(g.members) > 0 {
		return 0
	}
	return int64(len(j.protocolType) - len(g.protocolType))
}

// protocolBytes is what a member's protocols hold.
func protocolBytes(ps []protocol) int64 {
	n := 0
	for _, p := range ps {
		n += len(p.name) + len(p.metadata)
	}
	return int64(n)
}

// identityBytes is what a member's strings hold: its member ID (idLen
// bytes), instance ID, client ID and client host.
func identityBytes(idLen int, instanceID, clientID, clientHost string) int64 {
	return int64(idLen + len(instanceID) + len(clientID) + len(clientHost))
}

// bytes is what m holds of the budget.
func (m *member) bytes() int64 {
	return protocolBytes(m.protocols) + int64(len(m.assignment)) +
		identityBytes(len(m.id), m.instanceID, m.clientID, m.clientHost)
}

// addPending hands out a member ID, accounting for it.
func (c *Coordinator) addPending(g *group, id string, lapse time.Time) {
	g.pending[id] = lapse
	c.retained += int64(len(id))
}

// dropPending forgets a member ID handed out, accounting for it.
func (c *Coordinator) dropPending(g *group, id string) {
	delete(g.pending, id)
	c.retained -= int64(len(id))
}

// setAssignment gives m an assignment, accounting for it.
func (c *Coordinator) setAssignment(m *member, a []byte) {
	c.retained += int64(len(a)) - int64(len(m.assignment))
	m.assignment = a
}

// setProtocols gives m protocols, accounting for them.
func (c *Coordinator) setProtocols(m *member, ps []protocol) {
	c.retained += protocolBytes(ps) - protocolBytes(m.protocols)
	m.protocols = ps
}

// retains says whether n more bytes fit the budget, evicting Empty
// groups to make room if that is enough (evictForBytes); a refusal is
// counted and logged.
func (c *Coordinator) retains(n int64, group, call string) bool {
	if n <= 0 || c.retained+n <= int64(c.cfg.MaxRetainedBytes) {
		return true
	}
	if c.evictForBytes(c.retained+n-int64(c.cfg.MaxRetainedBytes), group) {
		return true
	}
	c.stats.OverBudget++
	c.log.Warn(call+" refused: group metadata over its budget", "group", group, "held", c.retained,
		"more", n, "max", c.cfg.MaxRetainedBytes)
	return false
}

// joinGrowth is how many bytes of the budget a join would add: the
// member ID it hands out, or the member it makes (less what the member
// it replaces or updates holds, or the member ID handed out that it
// uses) and, for the group's first member, its protocol type. A join
// that will be refused adds nothing. For a join that makes its group,
// g is a group not yet in memory, and the group's name is added.
func (g *group) joinGrowth(j *joinRequest) int64 {
	protocols := protocolBytes(j.protocols)
	if j.memberID != "" {
		if m := g.members[j.memberID]; m != nil {
			return protocols - protocolBytes(m.protocols)
		}
		if _, ok := g.pending[j.memberID]; ok {
			return protocols + identityBytes(0, j.instanceID, j.clientID, j.clientHost) + g.typeGrowth(j)
		}
		return 0
	}
	if j.instanceID == "" && j.version >= 4 {
		return int64(memberIDLen(j.clientID))
	}
	prefix := j.clientID
	if j.instanceID != "" {
		prefix = j.instanceID
	}
	n := protocols + identityBytes(memberIDLen(prefix), j.instanceID, j.clientID, j.clientHost) + g.typeGrowth(j)
	if id, ok := g.static[j.instanceID]; ok {
		old := g.members[id]
		n -= old.bytes() - int64(len(old.assignment)) // the assignment passes to the new member
	}
	return n
}

// syncGrowth is how many bytes of the budget the leader's assignments
// would add.
func (g *group) syncGrowth(assignments map[string][]byte) int64 {
	var n int64
	for _, m := range g.members {
		n += int64(len(assignments[m.id])) - int64(len(m.assignment))
	}
	return n
}

// evictForBytes drops from memory Empty groups with no member IDs
// handed out, other than keep, the longest Empty first (as addGroup does
// at MaxGroups), until they give need bytes back, and says whether they
// did; it drops none when all of them would not be enough. Empty groups
// hold their names and protocol types, and one that never committed is
// never forgotten (ForgetEmpty follows its offsets' expiry): without
// this, Empty groups below MaxGroups that filled the budget refused
// every join that adds bytes, for good.
func (c *Coordinator) evictForBytes(need int64, keep string) bool {
	var victims []*group
	var free int64
	for _, g := range c.groups {
		if g.state == StateEmpty && len(g.members) == 0 && len(g.pending) == 0 && g.name != keep {
			victims = append(victims, g)
			free += g.bytes()
		}
	}
	if free < need {
		return false
	}
	slices.SortFunc(victims, func(a, b *group) int { return a.emptySince.Compare(b.emptySince) })
	for _, g := range victims {
		if need <= 0 {
			break
		}
		delete(c.groups, g.name)
		c.retained -= g.bytes()
		need -= g.bytes()
		c.stats.GroupsEvicted++
		c.log.Info("empty group evicted from memory: group metadata at its budget", "group", g.name, "for", keep)
	}
	return true
}
