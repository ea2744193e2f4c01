package groups

// The byte budget of group metadata held in memory: members' protocol
// names and metadata from JoinGroup and their assignments from
// SyncGroup, kept for up to a session timeout. c.retained counts them;
// a join or sync that would take it past Config.MaxRetainedBytes is
// refused with COORDINATOR_NOT_AVAILABLE, which clients retry.

// protocolBytes is what a member's protocols hold.
func protocolBytes(ps []protocol) int64 {
	n := 0
	for _, p := range ps {
		n += len(p.name) + len(p.metadata)
	}
	return int64(n)
}

// bytes is what m holds of the budget.
func (m *member) bytes() int64 { return protocolBytes(m.protocols) + int64(len(m.assignment)) }

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

// retains says whether n more bytes fit the budget; a refusal is
// counted and logged.
func (c *Coordinator) retains(n int64, group, call string) bool {
	if n <= 0 || c.retained+n <= int64(c.cfg.MaxRetainedBytes) {
		return true
	}
	c.stats.OverBudget++
	c.log.Warn(call+" refused: group metadata over its budget", "group", group, "held", c.retained,
		"more", n, "max", c.cfg.MaxRetainedBytes)
	return false
}

// joinGrowth is how many bytes of the budget a join would add: its
// protocols, less those of the member it replaces or updates.
func (g *group) joinGrowth(j *joinRequest) int64 {
	n := protocolBytes(j.protocols)
	if m := g.members[j.memberID]; m != nil {
		n -= protocolBytes(m.protocols)
	} else if id, ok := g.static[j.instanceID]; ok && j.memberID == "" {
		n -= protocolBytes(g.members[id].protocols)
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
