package groups

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// program reads operations from fuzz bytes; past the end it reads zeros.
type program struct{ data []byte }

func (p *program) next() int {
	if len(p.data) == 0 {
		return 0
	}
	b := p.data[0]
	p.data = p.data[1:]
	return int(b)
}

func (p *program) pick(n int) int { return p.next() % n }

// driver runs a program of operations against a small coordinator
// through its non-blocking internals, as many clients would, checking
// the invariants after each step.
type driver struct {
	t       *testing.T
	h       *harness
	p       *program
	gens    generations
	names   []string
	members map[string][]string // member IDs ever seen, per group
	joins   []*joinCall
	syncs   []*syncCall
	groupOf map[*joinCall]string
	current map[string]int32 // last generation seen, per group
}

func runProgram(t *testing.T, data []byte) {
	p := &program{data: data}
	delay := time.Duration(p.pick(3)) * time.Second
	h := newHarness(t, func(c *Config) {
		c.MaxGroups = 2
		c.MaxMembers = 5
		c.InitialRebalanceDelay = delay
		c.MaxMemberBytes = 64
	})
	d := &driver{
		t: t, h: h, p: p,
		names:   []string{"g", "h", "k"},
		members: make(map[string][]string),
		groupOf: make(map[*joinCall]string),
		current: make(map[string]int32),
	}
	for len(p.data) > 0 {
		d.step()
		d.collect()
		if err := h.c.checkInvariants(); err != nil {
			t.Fatal(err)
		}
	}
	d.finish()
}

func (d *driver) group() string { return d.names[d.p.pick(len(d.names))] }

// member picks a member ID of the group: a known one, or a made-up one.
func (d *driver) member(group string) string {
	ids := d.members[group]
	if i := d.p.pick(len(ids) + 1); i < len(ids) {
		return ids[i]
	}
	return "stranger"
}

func (d *driver) generation(group string) int32 {
	return d.current[group] + int32(d.p.pick(4)) - 2 + 1 // mostly right, sometimes off
}

var protocolSets = [][]string{{"range"}, {"range", "sticky"}, {"sticky", "range"}, {"sticky"}, {"roundrobin"}}

func (d *driver) joinRequest(group, member string) *kmsg.JoinGroupRequest {
	req := joinReq(int16(d.p.pick(10)), member, protocolSets[d.p.pick(len(protocolSets))]...)
	req.Group = group
	req.SessionTimeoutMillis = int32(6000 + 1000*d.p.pick(8))
	req.RebalanceTimeoutMillis = int32(1000 * d.p.pick(30))
	switch d.p.pick(8) {
	case 0:
		req.ProtocolType = "connect"
	case 1:
		req.Protocols[0].Metadata = make([]byte, 100) // over MaxMemberBytes
	case 2:
		req.Protocols[0].Metadata = []byte{byte(d.p.next())}
	}
	if i := d.p.pick(6); i < 2 && req.Version >= 5 {
		req.InstanceID = kmsg.StringPtr([]string{"i0", "i1"}[i])
	}
	return req
}

func (d *driver) step() {
	group := d.group()
	switch d.p.pick(12) {
	case 0, 1: // a new member
		d.startJoin(group, d.joinRequest(group, ""))
	case 2, 3: // a member (re)joining with its ID
		d.startJoin(group, d.joinRequest(group, d.member(group)))
	case 4, 5:
		member := d.member(group)
		req := syncReq(int16(d.p.pick(6)), member, d.generation(group), nil)
		req.Group = group
		for _, id := range d.members[group] {
			if d.p.pick(2) == 0 {
				sa := kmsg.NewSyncGroupRequestGroupAssignment()
				sa.MemberID, sa.MemberAssignment = id, []byte(id)
				req.GroupAssignment = append(req.GroupAssignment, sa)
			}
		}
		resp, w := d.h.c.startSync(req)
		d.syncs = append(d.syncs, &syncCall{t: d.t, resp: resp, w: w})
	case 6:
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation = group, d.member(group), d.generation(group)
		d.h.c.Heartbeat(req)
	case 7:
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version, req.Group = int16(d.p.pick(6)), group
		req.MemberID = d.member(group)
		for range d.p.pick(3) {
			lm := kmsg.NewLeaveGroupRequestMember()
			lm.MemberID = d.member(group)
			if d.p.pick(3) == 0 {
				lm.InstanceID = kmsg.StringPtr("i0")
			}
			req.Members = append(req.Members, lm)
		}
		d.h.c.LeaveGroup(req)
	case 8:
		gen := d.generation(group)
		member := d.member(group)
		if d.p.pick(2) == 0 {
			gen, member = -1, ""
		}
		req := commitReq(int16(d.p.pick(10)), member, gen, int64(d.p.next()), 1+d.p.pick(3))
		req.Group = group
		d.h.c.OffsetCommit(req)
		fetch := fetchReq(int16(1+d.p.pick(7)), nil)
		fetch.Group = group
		d.h.c.OffsetFetch(fetch)
	case 9:
		d.h.tick(time.Duration(d.p.next()) * 100 * time.Millisecond)
	case 10: // a client goes away
		ctx, cancel := context.WithCancel(d.t.Context())
		cancel()
		if i := d.p.next(); i < len(d.joins) {
			if w := d.joins[i].w; w != nil {
				await(ctx, d.h.c, w, joinSlot)
				d.joins[i].w = nil
				d.joins[i].resp = nil
			}
		}
		if i := d.p.next(); i < len(d.syncs) {
			if w := d.syncs[i].w; w != nil {
				await(ctx, d.h.c, w, syncSlot)
				d.syncs[i].w = nil
			}
		}
	case 11:
		d.h.c.DescribeGroups(describeReq(int16(d.p.pick(7)), group, "nobody"))
		d.h.c.ListGroups(kmsg.NewPtrListGroupsRequest())
		d.h.c.Groups()
	}
}

func (d *driver) startJoin(group string, req *kmsg.JoinGroupRequest) {
	resp, w := d.h.c.startJoin(req, "c", "h")
	call := &joinCall{t: d.t, resp: resp, w: w}
	d.groupOf[call] = group
	d.joins = append(d.joins, call)
}

// collect takes in the answers that have come, recording members and
// generations, and checks each generation has one leader and protocol.
func (d *driver) collect() {
	joins := d.joins[:0]
	for _, j := range d.joins {
		r, ok := j.answered()
		if !ok {
			joins = append(joins, j)
			continue
		}
		group := d.groupOf[j]
		delete(d.groupOf, j)
		if r == nil {
			continue // abandoned
		}
		if err := d.gens.record(group, r); err != nil {
			d.t.Fatal(err)
		}
		if r.MemberID != "" {
			d.members[group] = append(d.members[group], r.MemberID)
		}
		if r.ErrorCode == 0 {
			d.current[group] = r.Generation
		}
	}
	d.joins = joins
	d.forgetEvicted()
	syncs := d.syncs[:0]
	for _, s := range d.syncs {
		if _, ok := s.answered(); !ok {
			syncs = append(syncs, s)
		}
	}
	d.syncs = syncs
}

// forgetEvicted forgets the generations of groups evicted from memory:
// a group made again starts again from generation 1.
func (d *driver) forgetEvicted() {
	d.h.c.mu.Lock()
	defer d.h.c.mu.Unlock()
	for name := range d.gens.seen {
		if d.h.c.groups[name] == nil {
			delete(d.gens.seen, name)
			d.current[name] = 0
		}
	}
}

// finish lets every client go and time run on: every group must empty,
// and no call be left waiting.
func (d *driver) finish() {
	ctx, cancel := context.WithCancel(d.t.Context())
	cancel()
	for _, j := range d.joins {
		if j.w != nil {
			await(ctx, d.h.c, j.w, joinSlot)
		}
	}
	for _, s := range d.syncs {
		if s.w != nil {
			await(ctx, d.h.c, s.w, syncSlot)
		}
	}
	d.h.noWaiters()
	for range 4 {
		d.h.tick(time.Minute)
	}
	if err := d.h.c.checkInvariants(); err != nil {
		d.t.Fatal(err)
	}
	for _, g := range d.h.c.Groups() {
		if g.State != StateEmpty {
			d.t.Fatalf("group %s %v after everyone left", g.Group, g.State)
		}
	}
}

// Random sequences of operations never panic, keep the invariants, give
// each generation one leader and protocol, and end with every group
// Empty and no call waiting.
func TestRandomOperations(t *testing.T) {
	runs := 300
	if testing.Short() {
		runs = 30
	}
	for seed := range uint64(runs) {
		r := rand.New(rand.NewPCG(seed, 7))
		data := make([]byte, 3000)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		runProgram(t, data)
	}
}

func FuzzOperations(f *testing.F) {
	f.Add([]byte{0, 0, 0, 4, 0, 0, 1})
	f.Add([]byte("join sync heartbeat leave commit tick abandon describe"))
	f.Fuzz(runProgram)
}
