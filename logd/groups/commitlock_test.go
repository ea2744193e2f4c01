package groups

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// slowStore is a MemoryStore whose first Commit of one group blocks,
// once it has started, until release is closed: a commit checked and
// then waiting at the disk.
type slowStore struct {
	*MemoryStore
	group   string
	once    sync.Once
	started chan struct{} // closed when the first blocked Commit starts
	release chan struct{}
}

func newSlowStore(group string) *slowStore {
	return &slowStore{MemoryStore: NewMemoryStore(), group: group, started: make(chan struct{}), release: make(chan struct{})}
}

func (s *slowStore) Commit(group string, offsets []Committed) error {
	if group == s.group {
		first := false
		s.once.Do(func() { first = true; close(s.started) })
		if first {
			<-s.release
		}
	}
	return s.MemoryStore.Commit(group, offsets)
}

// commitWaiters is how many commits of group hold or wait for its
// commit lock.
func (c *Coordinator) commitWaiters(group string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.commitLocks[group]; l != nil {
		return l.refs
	}
	return 0
}

// A commit checked while its member was in the group, and still on its
// way to the store when the member leaves and the next generation
// commits, is written before the next generation's commit, never over
// it: the next generation's commit waits for it (as Kafka checks and
// appends a commit under the group lock).
func TestCommitOfRemovedMemberNeverOverwritesNextGeneration(t *testing.T) {
	store := newSlowStore(testGroup)
	h := newHarness(t, func(c *Config) { c.Offsets = store })
	ids, gen := h.stable(1)
	old := ids[0]

	oldDone := make(chan *kmsg.OffsetCommitResponse, 1)
	go func() { oldDone <- h.c.OffsetCommit(commitReq(8, old, gen, 10, 1)) }()
	<-store.started

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version = 4
	leave.Group = testGroup
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = old
	leave.Members = append(leave.Members, lm)
	if code := h.c.LeaveGroup(leave).Members[0].ErrorCode; code != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(code))
	}
	nid := h.memberID("new")
	r := h.join(joinReq(4, nid)).must(nil)
	h.sync(syncReq(4, nid, r.Generation, map[string]string{nid: "a"})).must(nil)
	newDone := make(chan *kmsg.OffsetCommitResponse, 1)
	go func() { newDone <- h.c.OffsetCommit(commitReq(8, nid, r.Generation, 50, 1)) }()

	// Either the new commit is done (the stale one will then overwrite
	// it), or it waits behind the stale one.
	deadline := time.Now().Add(10 * time.Second)
	for done := false; !done; {
		if time.Now().After(deadline) {
			t.Fatal("the next generation's commit neither done nor waiting")
		}
		select {
		case resp := <-newDone:
			newDone <- resp
			done = true
		default:
			done = h.c.commitWaiters(testGroup) == 2
			time.Sleep(time.Millisecond)
		}
	}
	close(store.release)
	mustCommit(t, <-oldDone, nil) // it was valid when checked
	mustCommit(t, <-newDone, nil)
	if off, _, _ := store.Fetch(testGroup, "t", 0); off != 50 {
		t.Fatalf("committed offset %d, want 50: member %s of generation %d, which had left, overwrote generation %d's commit", off, old, gen, r.Generation)
	}
	mustCommit(t, h.c.OffsetCommit(commitReq(8, old, gen, 11, 1)), kerr.UnknownMemberID)
	if n := h.c.commitWaiters(testGroup); n != 0 {
		t.Fatalf("%d commit locks left held", n)
	}
}

// One group's commit waiting at the store does not hold up another
// group's.
func TestCommitsOfOtherGroupsDoNotWait(t *testing.T) {
	store := newSlowStore("slow")
	h := newHarness(t, func(c *Config) { c.Offsets = store })
	slow := commitReq(8, "", -1, 1, 1)
	slow.Group = "slow"
	done := make(chan *kmsg.OffsetCommitResponse, 1)
	go func() { done <- h.c.OffsetCommit(slow) }()
	<-store.started
	mustCommit(t, h.c.OffsetCommit(commitReq(8, "", -1, 7, 1)), nil)
	close(store.release)
	mustCommit(t, <-done, nil)
	if off, _, _ := store.Fetch("slow", "t", 0); off != 1 {
		t.Fatalf("slow group's offset %d, want 1", off)
	}
}
