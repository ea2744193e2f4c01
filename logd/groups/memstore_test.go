package groups

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestMemoryStoreByteBudget: a MemoryStore bounds the bytes its offsets
// are accounted at as logd's durable store does (Storage.MaxOffsetBytes,
// the same accounting: 256 bytes and the name per group, 128 bytes and
// the topic and metadata per partition). A commit that would pass the
// budget is answered INVALID_COMMIT_OFFSET_SIZE and stores nothing; one
// that adds no bytes is accepted.
func TestMemoryStoreByteBudget(t *testing.T) {
	four := int64(256 + len(testGroup) + 4*(128+len("t")+len("m0")))
	store := NewMemoryStoreMax(four)
	h := newHarness(t, func(c *Config) { c.Offsets = store })
	mustCommit(t, h.c.OffsetCommit(commitReq(7, "", -1, 10, 4)), nil)
	if n := store.Bytes(); n != four {
		t.Fatalf("Bytes() = %d after four partitions, want %d", n, four)
	}
	mustCommit(t, h.c.OffsetCommit(commitReq(7, "", -1, 20, 5)), kerr.InvalidCommitOffsetSize)
	if st := h.c.Stats(); st.CommitErrors != 1 {
		t.Fatalf("CommitErrors %d after a commit over the budget, want 1", st.CommitErrors)
	}
	if got := store.All(testGroup); len(got) != 4 || got[0].Offset != 10 {
		t.Fatalf("a refused commit stored offsets: %v", got)
	}
	mustCommit(t, h.c.OffsetCommit(commitReq(7, "", -1, 30, 4)), nil) // adds nothing
	if got := store.All(testGroup); len(got) != 4 || got[3].Offset != 30 {
		t.Fatalf("offsets after a commit that adds nothing: %v", got)
	}
	if n := store.Bytes(); n != four {
		t.Fatalf("Bytes() = %d, want %d", n, four)
	}
	err := store.Commit("other", nil)
	if !errors.Is(err, ErrOffsetsFull) || !errors.Is(err, kerr.InvalidCommitOffsetSize) {
		t.Fatalf("a new group over the budget: %v", err)
	}
	if n := NewMemoryStore().maxBytes; n != 64<<20 {
		t.Fatalf("NewMemoryStore's budget is %d bytes, want 64 MiB", n)
	}
}
