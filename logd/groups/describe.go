package groups

import "github.com/twmb/franz-go/pkg/kmsg"

// DescribeGroups handles DescribeGroups (versions 0 to 6). Member
// metadata, assignments and the protocol are shown for Stable groups
// only, as Kafka does. A group the coordinator does not hold is Empty
// when the store has offsets for it, and otherwise Dead (v0-5) or
// GROUP_ID_NOT_FOUND (v6+). Authorized operations are not reported.
// A group named several times is described once, where first named
// (Kafka describes it at every mention): a description carries the
// members' metadata and assignments, and a request naming a group
// thousands of times would be answered with as many copies of them.
func (c *Coordinator) DescribeGroups(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	// Made at their size (each name's share is charged to the request):
	// grown by append, they allocate about 3 times their final size.
	resp.Groups = make([]kmsg.DescribeGroupsResponseGroup, 0, len(req.Groups))
	unknown := make([]int, 0, len(req.Groups))
	seen := make(map[string]bool, len(req.Groups))
	c.mu.Lock()
	for _, name := range req.Groups {
		if seen[name] {
			continue
		}
		seen[name] = true
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group = name
		g := c.groups[name]
		switch {
		case name == "":
			dg.ErrorCode = codeInvalidGroup
		case g == nil:
			unknown = append(unknown, len(resp.Groups))
		default:
			describe(g, &dg)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	c.mu.Unlock()
	for _, i := range unknown {
		dg := &resp.Groups[i]
		switch {
		case len(c.cfg.Offsets.All(dg.Group)) > 0:
			dg.State = StateEmpty.String()
		case req.Version >= 6:
			dg.ErrorCode = codeGroupNotFound
			dg.ErrorMessage = kmsg.StringPtr("group " + dg.Group + " not found")
			fallthrough
		default:
			dg.State = StateDead.String()
		}
	}
	return resp
}

func describe(g *group, dg *kmsg.DescribeGroupsResponseGroup) {
	stable := g.state == StateStable
	dg.State = g.state.String()
	dg.ProtocolType = g.protocolType
	if stable {
		dg.Protocol = g.protocol
	}
	for _, m := range g.sortedMembers() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instancePtr()
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		if stable {
			dm.ProtocolMetadata = m.metadataFor(g.protocol)
			dm.MemberAssignment = m.assignment
		}
		dg.Members = append(dg.Members, dm)
	}
}
