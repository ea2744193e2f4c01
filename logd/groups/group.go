package groups

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// group is one consumer group. The Coordinator's lock guards it.
type group struct {
	name         string
	state        State
	generation   int32
	protocolType string // set by the first member of an Empty group
	protocol     string // chosen at each generation; "" when Empty
	leader       string // member ID; "" when Empty or while a rebalance has lost its leader
	members      map[string]*member
	pending      map[string]time.Time // member IDs sent with MEMBER_ID_REQUIRED → when they lapse
	static       map[string]string    // instance ID → member ID
	support      map[string]int       // protocol name → members supporting it
	pendingSync  map[string]struct{}  // members of this generation yet to send SyncGroup
	nextSeq      uint64

	rebalanceDeadline time.Time // PreparingRebalance: complete by then, whoever has rejoined
	delayUntil        time.Time // PreparingRebalance from Empty: do not complete before then
	syncDeadline      time.Time // members still in pendingSync by then are removed
	emptySince        time.Time // Empty: since when (the oldest Empty group is evicted first)
}

func newGroup(name string, now time.Time) *group {
	return &group{
		name:       name,
		members:    make(map[string]*member),
		pending:    make(map[string]time.Time),
		static:     make(map[string]string),
		support:    make(map[string]int),
		emptySince: now,
	}
}

// supports says whether a member with these protocols may join: the
// first member needs a protocol type and at least one protocol; later
// ones the group's type and a protocol every member supports. Members'
// protocol names are distinct (see parseJoin), so a count equal to the
// member count means everyone supports it.
func (g *group) supports(protocolType string, protocols []protocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		if g.support[p.name] == len(g.members) {
			return true
		}
	}
	return false
}

func (g *group) addSupport(m *member, delta int) {
	for _, p := range m.protocols {
		if g.support[p.name] += delta; g.support[p.name] == 0 {
			delete(g.support, p.name)
		}
	}
}

// selectProtocol chooses among the protocols every member supports: each
// member votes for the first of them in its own order of preference; the
// most votes win, ties going to the smallest name.
func (g *group) selectProtocol() string {
	votes := make(map[string]int)
	for _, m := range g.members {
		for _, p := range m.protocols {
			if g.support[p.name] == len(g.members) {
				votes[p.name]++
				break
			}
		}
	}
	best, most := "", 0
	for name, n := range votes {
		if n > most || n == most && name < best {
			best, most = name, n
		}
	}
	return best
}

// rebalanceTimeout is the longest rebalance timeout of the members.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalance)
	}
	return d
}

// sortedMembers lists the members in the order they joined.
func (g *group) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *member) int { return cmp.Compare(a.seq, b.seq) })
	return ms
}

// awaitingJoin counts the members waiting in JoinGroup.
func (g *group) awaitingJoin() int {
	n := 0
	for _, m := range g.members {
		if m.join != nil {
			n++
		}
	}
	return n
}

// checkInstance validates a request's instance ID against the member ID
// it names: 0, UNKNOWN_MEMBER_ID for an unknown instance, or
// FENCED_INSTANCE_ID when the instance now belongs to another member.
func (g *group) checkInstance(instanceID, memberID string) int16 {
	if instanceID == "" {
		return 0
	}
	id, ok := g.static[instanceID]
	switch {
	case !ok:
		return codeUnknownMember
	case id != memberID:
		return codeFenced
	}
	return 0
}

// checkMember finds the member a request comes from and checks the
// request's instance ID and generation, returning the member or the
// error code: FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID or
// ILLEGAL_GENERATION.
func (g *group) checkMember(instanceID, memberID string, generation int32) (*member, int16) {
	if code := g.checkInstance(instanceID, memberID); code != 0 {
		return nil, code
	}
	m := g.members[memberID]
	switch {
	case m == nil:
		return nil, codeUnknownMember
	case generation != g.generation:
		return nil, codeIllegalGeneration
	}
	return m, 0
}

// nextGeneration skips 0 and negative numbers when the counter wraps:
// -1 means "no generation" in commits.
func nextGeneration(g int32) int32 {
	if g == math.MaxInt32 {
		return 1
	}
	return g + 1
}
