package storage

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// encodeCommitV0 appends a commit record as logd wrote them before
// offsets expired: type 1, no time.
func encodeCommitV0(b []byte, group string, offs []GroupOffset) []byte {
	start := len(b)
	b = append(b, make([]byte, offRecHeaderLen)...)
	b = append(b, offRecCommit)
	return sealRecord(appendCommitBody(b, group, offs), start)
}

// expiredCounter is a HookGroupOffsetsExpire.
type expiredCounter struct{ groups, partitions int }

func (c *expiredCounter) OnGroupOffsetsExpire(_ string, partitions int) {
	c.groups++
	c.partitions += partitions
}

func expiryConfig(t *testing.T, clk *testClock) (Config, *expiredCounter) {
	cfg := testConfig(t, clk)
	cfg.OffsetsRetention = time.Hour
	h := &expiredCounter{}
	cfg.Hooks = []Hook{h}
	return cfg, h
}

func mustCommit(t *testing.T, o *OffsetStore, group string, offs ...GroupOffset) {
	t.Helper()
	if err := o.Commit(group, offs); err != nil {
		t.Fatalf("commit %s: %v", group, err)
	}
}

func mustExpire(t *testing.T, o *OffsetStore, now time.Time, want int) {
	t.Helper()
	n, err := o.Expire(now)
	if err != nil || n != want {
		t.Fatalf("Expire: %d groups, %v; want %d", n, err, want)
	}
}

func groupsAre(t *testing.T, o *OffsetStore, want ...string) {
	t.Helper()
	if got := o.Groups(); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("groups %v, want %v", got, want)
	}
}

// TestOffsetsExpire: a group without members expires OffsetsRetention
// after its last commit, not before; a commit restarts its clock; the
// deletion is durable and counted.
func TestOffsetsExpire(t *testing.T) {
	clk := newClock()
	cfg, h := expiryConfig(t, clk)
	s := mustOpen(t, cfg)
	o := s.Offsets()
	mustCommit(t, o, "old", GroupOffset{"a", 0, 1, ""}, GroupOffset{"a", 1, 2, ""})
	mustCommit(t, o, "again", GroupOffset{"a", 0, 1, ""})
	clk.add(30 * time.Minute)
	mustCommit(t, o, "again", GroupOffset{"a", 0, 2, ""})
	mustCommit(t, o, "young", GroupOffset{"a", 0, 1, ""})
	clk.add(30*time.Minute - time.Millisecond)
	mustExpire(t, o, clk.now(), 0)
	clk.add(time.Millisecond)
	mustExpire(t, o, clk.now(), 1)
	groupsAre(t, o, "again", "young")
	if h.groups != 1 || h.partitions != 2 {
		t.Fatalf("hook told of %d groups, %d partitions", h.groups, h.partitions)
	}
	s.Close()
	s = mustOpen(t, cfg)
	defer s.Close()
	o = s.Offsets()
	groupsAre(t, o, "again", "young")
	clk.add(30 * time.Minute)
	// Maintain runs the expiry.
	if err := s.Maintain(clk.now()); err != nil {
		t.Fatal(err)
	}
	groupsAre(t, o)
	if _, _, ok := o.Fetch("young", "a", 0); ok {
		t.Fatal("expired offset fetched")
	}
}

// TestOffsetsExpireKeepsActive: a group the active function lists never
// expires; once it is no longer listed, its retention runs from the last
// time it was.
func TestOffsetsExpireKeepsActive(t *testing.T) {
	clk := newClock()
	cfg, _ := expiryConfig(t, clk)
	s := mustOpen(t, cfg)
	defer s.Close()
	o := s.Offsets()
	live := []string{"live", "unknown"}
	o.SetActive(func() []string { return live })
	mustCommit(t, o, "live", GroupOffset{"a", 0, 1, ""})
	mustCommit(t, o, "idle", GroupOffset{"a", 0, 1, ""})
	for range 5 {
		clk.add(time.Hour)
		mustExpire(t, o, clk.now(), min(1, len(o.Groups())-1))
		groupsAre(t, o, "live")
	}
	live = nil
	clk.add(time.Hour - time.Millisecond)
	mustExpire(t, o, clk.now(), 0)
	clk.add(time.Millisecond)
	mustExpire(t, o, clk.now(), 1)
	groupsAre(t, o)

	// Seen with members soon after its commit (too soon to be recorded
	// on disk), then Empty: the clock runs from when it was seen.
	mustCommit(t, o, "short", GroupOffset{"a", 0, 1, ""})
	live = []string{"short"}
	clk.add(5 * time.Minute)
	mustExpire(t, o, clk.now(), 0)
	live = nil
	clk.add(55 * time.Minute)
	mustExpire(t, o, clk.now(), 0)
	clk.add(5 * time.Minute)
	mustExpire(t, o, clk.now(), 1)
}

// TestOffsetsExpireAcrossRestart: commit times are on disk, not taken
// anew at each open; a group with members is recorded as such, so after
// a restart (when no group has members yet) it keeps its offsets for
// most of the retention; commits of the old format (no time) count from
// the open that reads them.
func TestOffsetsExpireAcrossRestart(t *testing.T) {
	clk := newClock()
	cfg, _ := expiryConfig(t, clk)
	s := mustOpen(t, cfg)
	o := s.Offsets()
	mustCommit(t, o, "committed", GroupOffset{"a", 0, 1, ""})
	mustCommit(t, o, "live", GroupOffset{"a", 0, 1, ""})
	o.SetActive(func() []string { return []string{"live"} })
	clk.add(50 * time.Minute)
	mustExpire(t, o, clk.now(), 0) // records that "live" has members at +50m
	s.Close()

	clk.add(5 * time.Minute)
	s = mustOpen(t, cfg)
	o = s.Offsets()
	clk.add(5 * time.Minute) // +60m: "committed" is due, "live" is not
	mustExpire(t, o, clk.now(), 1)
	groupsAre(t, o, "live")
	clk.add(50*time.Minute - time.Millisecond)
	mustExpire(t, o, clk.now(), 0)
	clk.add(time.Millisecond) // +110m: an hour after "live" last had members
	mustExpire(t, o, clk.now(), 1)
	s.Close()

	// The old format: no time. Its commits count from the open.
	path := filepath.Join(cfg.Dir, offsetsDir, offsetsFile)
	old := encodeCommitV0(nil, "v0", []GroupOffset{{"a", 0, 7, "m"}, {"b", 3, 9, ""}})
	old = encodeCommitV0(old, "v0", []GroupOffset{{"a", 0, 8, "n"}})
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	clk.add(24 * time.Hour)
	s = mustOpen(t, cfg)
	defer s.Close()
	o = s.Offsets()
	if got := o.All("v0"); !slices.Equal(got, []GroupOffset{{"a", 0, 8, "n"}, {"b", 3, 9, ""}}) {
		t.Fatalf("old format read as %v", got)
	}
	mustCommit(t, o, "v1", GroupOffset{"a", 0, 1, ""})
	clk.add(time.Hour - time.Millisecond)
	mustExpire(t, o, clk.now(), 0)
	clk.add(time.Millisecond)
	mustExpire(t, o, clk.now(), 2)
}

// TestOffsetsFullStore: when MaxGroups groups hold offsets, a new group
// commits once expired ones make room, even with maintenance off; a
// store full of groups with members refuses it, and a flood of refused
// commits does not list the active groups again and again.
func TestOffsetsFullStore(t *testing.T) {
	clk := newClock()
	cfg, h := expiryConfig(t, clk)
	cfg.MaxGroups = 3
	s := mustOpen(t, cfg)
	defer s.Close()
	o := s.Offsets()
	live := []string{"g1"}
	lists := 0
	o.SetActive(func() []string { lists++; return live })
	for _, g := range []string{"g1", "g2", "g3"} {
		mustCommit(t, o, g, GroupOffset{"a", 0, 1, ""})
	}
	clk.add(59 * time.Minute)
	if err := o.Commit("g4", []GroupOffset{{"a", 0, 1, ""}}); !errors.Is(err, ErrTooManyGroups) {
		t.Fatalf("g4 before retention: %v", err)
	}
	clk.add(time.Minute)
	mustCommit(t, o, "g4", GroupOffset{"a", 0, 1, ""})
	groupsAre(t, o, "g1", "g4")
	if h.groups != 2 {
		t.Fatalf("hook told of %d groups", h.groups)
	}

	// Full of groups with members, past retention: refused.
	mustCommit(t, o, "g5", GroupOffset{"a", 0, 1, ""})
	live = []string{"g1", "g4", "g5"}
	clk.add(2 * time.Hour)
	lists = 0
	for range 100 {
		if err := o.Commit("g6", []GroupOffset{{"a", 0, 1, ""}}); !errors.Is(err, ErrTooManyGroups) {
			t.Fatalf("g6 into a store of live groups: %v", err)
		}
	}
	if lists != 1 {
		t.Fatalf("100 refused commits listed the active groups %d times", lists)
	}
	groupsAre(t, o, "g1", "g4", "g5")
}

// TestOffsetsRetentionConfig: 0 takes the default, -1 never expires,
// other negatives and sub-millisecond values are refused.
func TestOffsetsRetentionConfig(t *testing.T) {
	clk := newClock()
	for _, bad := range []time.Duration{-2, -time.Hour, time.Microsecond} {
		cfg := testConfig(t, clk)
		cfg.OffsetsRetention = bad
		var ce *ConfigError
		if err := cfg.Validate(); !errors.As(err, &ce) || ce.Field != "OffsetsRetention" {
			t.Fatalf("OffsetsRetention %v: %v", bad, err)
		}
	}
	cfg := testConfig(t, clk)
	s := mustOpen(t, cfg)
	mustCommit(t, s.Offsets(), "g", GroupOffset{"a", 0, 1, ""})
	clk.add(DefaultOffsetsRetention - time.Millisecond)
	mustExpire(t, s.Offsets(), clk.now(), 0)
	clk.add(time.Millisecond)
	mustExpire(t, s.Offsets(), clk.now(), 1)
	s.Close()

	cfg = testConfig(t, clk)
	cfg.OffsetsRetention = -1
	s = mustOpen(t, cfg)
	defer s.Close()
	mustCommit(t, s.Offsets(), "g", GroupOffset{"a", 0, 1, ""})
	clk.add(1000 * DefaultOffsetsRetention)
	mustExpire(t, s.Offsets(), clk.now(), 0)
}
