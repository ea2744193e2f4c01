package groups

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testGroup   = "g"
	testSession = 10 * time.Second
)

// clock is a fake clock, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_700_000_000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// harness is a Coordinator on a fake clock and a MemoryStore.
type harness struct {
	t     *testing.T
	c     *Coordinator
	clock *clock
	store *MemoryStore
}

func newHarness(t *testing.T, configure ...func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, clock: newClock(), store: NewMemoryStore()}
	cfg := Config{
		Offsets: h.store,
		Now:     h.clock.Now,
		Rand:    rand.New(rand.NewPCG(1, 2)),
		PartitionExists: func(topic string, p int32) bool {
			return topic != "nope" && p < 8
		},
	}
	for _, f := range configure {
		f(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	return h
}

// tick advances the clock and ticks the coordinator.
func (h *harness) tick(d time.Duration) { h.c.Tick(h.clock.Advance(d)) }

// joinReq is a JoinGroup request from a "consumer" member supporting the
// named protocols, in order; each protocol's metadata names it.
func joinReq(version int16, member string, protocols ...string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = version
	req.Group = testGroup
	req.MemberID = member
	req.SessionTimeoutMillis = int32(testSession / time.Millisecond)
	req.RebalanceTimeoutMillis = int32(2 * testSession / time.Millisecond)
	req.ProtocolType = consumerProtocol
	if len(protocols) == 0 {
		protocols = []string{"range"}
	}
	for _, p := range protocols {
		jp := kmsg.NewJoinGroupRequestProtocol()
		jp.Name = p
		jp.Metadata = []byte("meta:" + p)
		req.Protocols = append(req.Protocols, jp)
	}
	return req
}

// call is a JoinGroup or SyncGroup started through the internal API:
// answered at once, or through its waiter. Calls finish within the
// internal call that answers them, so tests look without waiting.
type call[R any] struct {
	t    *testing.T
	resp R
	w    *waiter[R]
}

type (
	joinCall = call[*kmsg.JoinGroupResponse]
	syncCall = call[*kmsg.SyncGroupResponse]
)

func (h *harness) join(req *kmsg.JoinGroupRequest) *joinCall {
	resp, w := h.c.startJoin(req, "client", "127.0.0.1:1")
	return &joinCall{t: h.t, resp: resp, w: w}
}

func (h *harness) sync(req *kmsg.SyncGroupRequest) *syncCall {
	resp, w := h.c.startSync(req)
	return &syncCall{t: h.t, resp: resp, w: w}
}

// answered returns the response if the call has been answered.
func (c *call[R]) answered() (R, bool) {
	if c.w == nil {
		return c.resp, true
	}
	select {
	case r := <-c.w.done:
		c.resp, c.w = r, nil
		return r, true
	default:
		var none R
		return none, false
	}
}

// must returns the response, failing the test if the call is still
// waiting or got an error other than want.
func (c *call[R]) must(want *kerr.Error) R {
	c.t.Helper()
	r, ok := c.answered()
	if !ok {
		c.t.Fatalf("%T still waiting", r)
	}
	checkCode(c.t, fmt.Sprintf("%T", r), errorCode(r), want)
	return r
}

func errorCode(r any) int16 {
	switch r := r.(type) {
	case *kmsg.JoinGroupResponse:
		return r.ErrorCode
	case *kmsg.SyncGroupResponse:
		return r.ErrorCode
	}
	panic(fmt.Sprintf("no error code in %T", r))
}

func (c *call[R]) waiting() {
	c.t.Helper()
	if r, ok := c.answered(); ok {
		c.t.Fatalf("answered, want it waiting: %+v", r)
	}
}

func syncReq(version int16, member string, generation int32, assignments map[string]string) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = version
	req.Group = testGroup
	req.MemberID = member
	req.Generation = generation
	for id, a := range assignments {
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID = id
		sa.MemberAssignment = []byte(a)
		req.GroupAssignment = append(req.GroupAssignment, sa)
	}
	return req
}

func (h *harness) heartbeat(member string, generation int32) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group = testGroup
	req.MemberID = member
	req.Generation = generation
	return h.c.Heartbeat(req).ErrorCode
}

func (h *harness) mustHeartbeat(member string, generation int32, want *kerr.Error) {
	h.t.Helper()
	checkCode(h.t, "Heartbeat", h.heartbeat(member, generation), want)
}

// memberID runs the v4+ first join and returns the member ID handed out.
func (h *harness) memberID(clientID string) string {
	h.t.Helper()
	resp, w := h.c.startJoin(joinReq(4, ""), clientID, "127.0.0.1:1")
	if w != nil {
		h.t.Fatal("first join waits")
	}
	checkCode(h.t, "JoinGroup", resp.ErrorCode, kerr.MemberIDRequired)
	return resp.MemberID
}

func (h *harness) state() State {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if g := h.c.groups[testGroup]; g != nil {
		return g.state
	}
	return StateDead
}

func (h *harness) mustState(want State) {
	h.t.Helper()
	if got := h.state(); got != want {
		h.t.Fatalf("state %v, want %v", got, want)
	}
}

// checkCode fails unless code is want's (nil: no error).
func checkCode(t *testing.T, what string, code int16, want *kerr.Error) {
	t.Helper()
	var wantCode int16
	if want != nil {
		wantCode = want.Code
	}
	if code != wantCode {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(code), want)
	}
}

// stable forms a Stable group of n members (v4+ flow, one generation,
// with InitialRebalanceDelay unset: the first member forms generation 1,
// every later one triggers a rebalance that the others rejoin), assigns
// each member "a:<id>" and returns the member IDs, leader first, and the
// generation.
func (h *harness) stable(n int) ([]string, int32) {
	h.t.Helper()
	var ids []string
	var calls []*joinCall
	for i := range n {
		ids = append(ids, h.memberID("c"))
		calls = append(calls, h.join(joinReq(4, ids[i])))
		for k := range i {
			calls[k] = h.join(joinReq(4, ids[k]))
		}
	}
	var gen int32
	var leader string
	for i, call := range calls {
		r := call.must(nil)
		if i == 0 {
			gen, leader = r.Generation, r.LeaderID
		}
		if r.Generation != gen || r.LeaderID != leader {
			h.t.Fatalf("member %d: generation %d leader %s, want %d %s", i, r.Generation, r.LeaderID, gen, leader)
		}
	}
	assign := make(map[string]string)
	for _, id := range ids {
		assign[id] = "a:" + id
	}
	var syncs []*syncCall
	for _, id := range ids {
		if id != leader {
			s := h.sync(syncReq(4, id, gen, nil))
			s.waiting()
			syncs = append(syncs, s)
		}
	}
	h.sync(syncReq(4, leader, gen, assign)).must(nil)
	for _, s := range syncs {
		s.must(nil)
	}
	h.mustState(StateStable)
	ordered := []string{leader}
	for _, id := range ids {
		if id != leader {
			ordered = append(ordered, id)
		}
	}
	return ordered, gen
}
