package groups

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// within waits for a result, failing the test after a generous deadline.
func within[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("timed out")
		panic("unreachable")
	}
}

// noWaiters fails if any member of any group still holds a waiter.
func (h *harness) noWaiters() {
	h.t.Helper()
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	for _, g := range h.c.groups {
		for _, m := range g.members {
			if m.join != nil || m.sync != nil {
				h.t.Fatalf("group %s member %s still has a waiter", g.name, m.id)
			}
		}
	}
}

// Blocked JoinGroup and SyncGroup calls return when their context ends,
// and leave nothing behind: no waiter, no goroutine (TestMain checks).
func TestCancelledWaiters(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.InitialRebalanceDelay = time.Minute })
	const n = 20
	ctx, cancel := context.WithCancel(t.Context())
	joins := make(chan *kmsg.JoinGroupResponse, n)
	for range n {
		go func() { joins <- h.c.JoinGroup(ctx, joinReq(3, ""), "c", "h") }()
	}
	cancel()
	for range n {
		checkCode(t, "JoinGroup", within(t, joins).ErrorCode, kerr.CoordinatorNotAvailable)
	}
	h.noWaiters()
	if got := h.c.Stats().Abandoned; got != n {
		t.Fatalf("Abandoned %d", got)
	}
	// The abandoned members have not rejoined: the rebalance completes
	// without them.
	h.tick(2 * testSession)
	h.mustState(StateEmpty)

	ids, gen := h.stableWithDelay(2)
	ctx, cancel = context.WithCancel(t.Context())
	req := joinReq(4, ids[1])
	req.Protocols[0].Metadata = []byte("new")
	rejoined := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { rejoined <- h.c.JoinGroup(ctx, req, "c", "h") }()
	r0 := h.c.JoinGroup(t.Context(), joinReq(4, ids[0]), "c", "h")
	checkCode(t, "JoinGroup", r0.ErrorCode, nil)
	checkCode(t, "JoinGroup", within(t, rejoined).ErrorCode, nil)
	synced := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { synced <- h.c.SyncGroup(ctx, syncReq(4, ids[1], gen+1, nil)) }()
	cancel()
	checkCode(t, "SyncGroup", within(t, synced).ErrorCode, kerr.CoordinatorNotAvailable)
	h.noWaiters()
	// The leader's sync still completes the generation; the member that
	// gave up gets its assignment by syncing again.
	resp := h.c.SyncGroup(t.Context(), syncReq(4, ids[0], gen+1, map[string]string{ids[1]: "mine"}))
	checkCode(t, "SyncGroup", resp.ErrorCode, nil)
	if r := h.c.SyncGroup(t.Context(), syncReq(4, ids[1], gen+1, nil)); string(r.MemberAssignment) != "mine" {
		t.Fatalf("assignment %q", r.MemberAssignment)
	}
}

// stableWithDelay forms a Stable group of n members through the public,
// blocking API; with an initial delay configured, they form one
// generation once the clock passes it. It returns the member IDs, leader
// first, and the generation.
func (h *harness) stableWithDelay(n int) ([]string, int32) {
	h.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = h.memberID("c")
	}
	joined := make(chan *kmsg.JoinGroupResponse, n)
	for _, id := range ids {
		go func() { joined <- h.c.JoinGroup(h.t.Context(), joinReq(4, id), "c", "h") }()
	}
	h.waitFor(func(g *group) bool { return g.awaitingJoin() == n })
	h.tick(h.c.cfg.InitialRebalanceDelay)
	var leader string
	var gen int32
	for range n {
		r := within(h.t, joined)
		checkCode(h.t, "JoinGroup", r.ErrorCode, nil)
		leader, gen = r.LeaderID, r.Generation
	}
	synced := make(chan *kmsg.SyncGroupResponse, n)
	for _, id := range ids {
		if id != leader {
			go func() { synced <- h.c.SyncGroup(h.t.Context(), syncReq(4, id, gen, nil)) }()
		}
	}
	h.waitFor(func(g *group) bool { return len(g.pendingSync) == 1 })
	synced <- h.c.SyncGroup(h.t.Context(), syncReq(4, leader, gen, nil))
	for range n {
		checkCode(h.t, "SyncGroup", within(h.t, synced).ErrorCode, nil)
	}
	ordered := []string{leader}
	for _, id := range ids {
		if id != leader {
			ordered = append(ordered, id)
		}
	}
	return ordered, gen
}

// waitFor waits until the test group satisfies cond: the condition is
// checked each time a goroutine gets to run, up to a deadline.
func (h *harness) waitFor(cond func(*group) bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.c.mu.Lock()
		g := h.c.groups[testGroup]
		ok := g != nil && cond(g)
		h.c.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatal("condition not reached")
		}
		runtime.Gosched()
	}
}

// Run drives deadlines from the configured clock, and returns when its
// context ends.
func TestRun(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.TickInterval = time.Millisecond })
	ids, gen := h.stable(2)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		h.c.Run(ctx)
		close(done)
	}()
	h.clock.Advance(testSession)
	h.waitFor(func(g *group) bool { return g.state == StateEmpty })
	h.mustHeartbeat(ids[0], gen, kerr.UnknownMemberID)
	cancel()
	within(t, done)
}

func TestConfig(t *testing.T) {
	store := NewMemoryStore()
	for _, tt := range []struct {
		name string
		cfg  Config
	}{
		{"no store", Config{}},
		{"session range", Config{Offsets: store, MinSessionTimeout: time.Minute, MaxSessionTimeout: time.Second}},
		{"negative delay", Config{Offsets: store, InitialRebalanceDelay: -1}},
		{"groups", Config{Offsets: store, MaxGroups: -1}},
		{"members", Config{Offsets: store, MaxMembers: -1}},
		{"member bytes", Config{Offsets: store, MaxMemberBytes: -1}},
		{"offset metadata", Config{Offsets: store, MaxOffsetMetadata: -1}},
		{"tick", Config{Offsets: store, TickInterval: -1}},
	} {
		if _, err := New(tt.cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: err %v", tt.name, err)
		}
	}
	c, err := New(Config{Offsets: store})
	if err != nil {
		t.Fatal(err)
	}
	if c.cfg.MinSessionTimeout != 6*time.Second || c.cfg.MaxSessionTimeout != 30*time.Minute ||
		c.cfg.InitialRebalanceDelay != 0 || c.cfg.MaxGroups != DefaultMaxGroups || c.cfg.MaxMembers != DefaultMaxMembers {
		t.Fatalf("defaults %+v", c.cfg)
	}
}
