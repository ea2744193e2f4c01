package groups

// ActiveGroups lists, unsorted, the groups that are not Empty (they have
// members) or have handed out member IDs not yet used: those whose
// committed offsets must not expire, as Kafka expires a group's offsets
// only once it is Empty. logd's offsets store asks at every expiry pass
// (storage.OffsetStore.SetActive).
func (c *Coordinator) ActiveGroups() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, g := range c.groups {
		if g.state != StateEmpty || len(g.members) > 0 || len(g.pending) > 0 {
			out = append(out, g.name)
		}
	}
	return out
}

// ForgetEmpty drops the group from memory if it is Empty with no member
// IDs handed out, and says whether it did: logd calls it when the
// group's offsets expire, so that, as in Kafka, a group with neither
// members nor offsets is gone (ListGroups no longer lists it,
// DescribeGroups reports it Dead).
func (c *Coordinator) ForgetEmpty(group string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil || g.state != StateEmpty || len(g.members) > 0 || len(g.pending) > 0 {
		return false
	}
	delete(c.groups, group)
	c.retained -= g.bytes()
	return true
}
