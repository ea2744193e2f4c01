package groups

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupInfo describes one group, for metrics.
type GroupInfo struct {
	Group        string
	State        State
	ProtocolType string
	Protocol     string // chosen for the current generation; "" when Empty
	Generation   int32
	Members      int
	Committed    []Committed // sorted by topic and partition
}

// classicType is the group type of every group here (ListGroups v5+).
const classicType = "classic"

// ListGroups handles ListGroups (versions 0 to 5), filtered by state
// (v4+, names compared without regard to case) and by type (v5+; every
// group here is "classic"). Groups known only to a store that is a
// GroupLister are listed as Empty.
func (c *Coordinator) ListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	if len(req.TypesFilter) > 0 && !slices.ContainsFunc(req.TypesFilter, equalFold(classicType)) {
		return resp
	}
	for _, gi := range c.snapshot() {
		if len(req.StatesFilter) > 0 && !slices.ContainsFunc(req.StatesFilter, equalFold(gi.State.String())) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = gi.Group
		lg.ProtocolType = gi.ProtocolType
		lg.GroupState = gi.State.String()
		lg.GroupType = classicType
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}

// Groups describes every group, with its committed offsets, sorted by
// name: those held in memory, and those a GroupLister store knows.
func (c *Coordinator) Groups() []GroupInfo {
	infos := c.snapshot()
	for i := range infos {
		infos[i].Committed = c.cfg.Offsets.All(infos[i].Group)
	}
	return infos
}

// snapshot describes the groups without their offsets, sorted by name.
func (c *Coordinator) snapshot() []GroupInfo {
	c.mu.Lock()
	infos := make([]GroupInfo, 0, len(c.groups))
	held := make(map[string]bool, len(c.groups))
	for _, g := range c.groups {
		held[g.name] = true
		infos = append(infos, GroupInfo{
			Group:        g.name,
			State:        g.state,
			ProtocolType: g.protocolType,
			Protocol:     g.protocol,
			Generation:   g.generation,
			Members:      len(g.members),
		})
	}
	c.mu.Unlock()
	if lister, ok := c.cfg.Offsets.(GroupLister); ok {
		for _, name := range lister.Groups() {
			if !held[name] {
				infos = append(infos, GroupInfo{Group: name, State: StateEmpty})
			}
		}
	}
	slices.SortFunc(infos, func(a, b GroupInfo) int { return strings.Compare(a.Group, b.Group) })
	return infos
}

func equalFold(s string) func(string) bool {
	return func(t string) bool { return strings.EqualFold(s, t) }
}
