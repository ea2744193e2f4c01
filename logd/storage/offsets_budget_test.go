package storage

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// accounted recomputes, through the public API, what Bytes should say.
func accounted(o *OffsetStore) int64 {
	var n int64
	for _, g := range o.Groups() {
		n += groupBytes(g)
		for _, x := range o.All(g) {
			n += entryBytes(x)
		}
	}
	return n
}

func bytesAre(t *testing.T, o *OffsetStore) int64 {
	t.Helper()
	n, want := o.Bytes(), accounted(o)
	if n != want {
		t.Fatalf("Bytes() = %d, the offsets held count %d", n, want)
	}
	return n
}

// fatOffsets is n partitions of topic with metadata of the largest size.
func fatOffsets(topic string, n int) []GroupOffset {
	meta := strings.Repeat("m", DefaultMaxOffsetMetadata)
	offs := make([]GroupOffset, n)
	for p := range offs {
		offs[p] = GroupOffset{topic, int32(p), 1, meta}
	}
	return offs
}

// TestOffsetsByteBudget: groups committing many partitions with 4 KiB
// of metadata each, as many groups as MaxGroups allows, would hold
// memory without bound; MaxOffsetBytes stops them, refusing the commits
// that would pass it with ErrOffsetsFull, while commits that do not
// grow the offsets still go through.
func TestOffsetsByteBudget(t *testing.T) {
	const budget = 1 << 20
	clk := newClock()
	cfg := testConfig(t, clk)
	cfg.MaxOffsetBytes = budget
	s := mustOpen(t, cfg)
	defer s.Close()
	o := s.Offsets()
	accepted, refused := 0, 0
	for g := range 16 {
		switch err := o.Commit(fmt.Sprint("g", g), fatOffsets("topic", 64)); {
		case err == nil:
			accepted++
		case errors.Is(err, ErrOffsetsFull):
			refused++
		default:
			t.Fatal(err)
		}
	}
	// 16 × 64 × 4 KiB would be 4 MiB; a commit is taken whole or not.
	if n := bytesAre(t, o); n > budget || accepted != 3 || refused != 13 {
		t.Fatalf("%d bytes held, %d commits accepted, %d refused", n, accepted, refused)
	}
	// Single partitions fill what is left, and no more.
	room := budget - o.Bytes()
	for p := int32(0); ; p++ {
		err := o.Commit("g0", []GroupOffset{{"other", p, 1, strings.Repeat("m", DefaultMaxOffsetMetadata)}})
		if errors.Is(err, ErrOffsetsFull) {
			if want := room / entryBytes(fatOffsets("other", 1)[0]); int64(p) != want {
				t.Fatalf("%d more partitions fitted, want %d", p, want)
			}
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	held := bytesAre(t, o)
	if held > budget {
		t.Fatalf("%d bytes held", held)
	}
	if err := o.Commit("new", fatOffsets("topic", 1)); !errors.Is(err, ErrOffsetsFull) {
		t.Fatalf("a new group into a full store: %v", err)
	}
	// The same partitions again, and one named twice: no growth.
	offs := fatOffsets("topic", 64)
	mustCommit(t, o, "g0", append(offs, offs[0])...)
	if n := bytesAre(t, o); n != held {
		t.Fatalf("recommitting the same offsets changed the bytes held: %d, was %d", n, held)
	}
	// Dropping metadata frees room for another group.
	for i := range offs {
		offs[i].Metadata = ""
	}
	mustCommit(t, o, "g0", offs...)
	mustCommit(t, o, "g3", fatOffsets("topic", 32)...)
	bytesAre(t, o)
}

// TestOffsetsBudgetFreed: a group's deletion, a topic's deletion and
// expiry give their bytes back; the accounting stays exact through
// every kind of record and through a restart.
func TestOffsetsBudgetFreed(t *testing.T) {
	clk := newClock()
	cfg, _ := expiryConfig(t, clk)
	// Room for exactly two groups of 64 partitions with 4 KiB metadata.
	cfg.MaxOffsetBytes = 2*64*entryBytes(fatOffsets("a", 1)[0]) + groupBytes("g1") + groupBytes("g2")
	s := mustOpen(t, cfg)
	o := s.Offsets()
	mustCommit(t, o, "g1", fatOffsets("a", 64)...)
	mustCommit(t, o, "g2", fatOffsets("a", 64)...)
	if n := bytesAre(t, o); n != cfg.MaxOffsetBytes {
		t.Fatalf("%d bytes held, want exactly the budget %d", n, cfg.MaxOffsetBytes)
	}
	if err := o.Commit("g3", nil); !errors.Is(err, ErrOffsetsFull) {
		t.Fatalf("g3 into a full store: %v", err)
	}
	if err := o.DeleteGroup("g2"); err != nil {
		t.Fatal(err)
	}
	bytesAre(t, o)
	mustCommit(t, o, "g3", fatOffsets("b", 64)...)
	if err := o.Commit("g4", nil); !errors.Is(err, ErrOffsetsFull) {
		t.Fatalf("g4 into a full store: %v", err)
	}

	// Deleting topic b frees g3's partitions (and g3, then empty).
	if err := s.CreateTopic("b", 1, TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTopic("b"); err != nil {
		t.Fatal(err)
	}
	groupsAre(t, o, "g1")
	bytesAre(t, o)
	mustCommit(t, o, "g4", fatOffsets("a", 64)...)

	// A restart replays the log to the same count.
	held := bytesAre(t, o)
	s.Close()
	s = mustOpen(t, cfg)
	defer s.Close()
	o = s.Offsets()
	if n := bytesAre(t, o); n != held {
		t.Fatalf("after restart %d bytes, before %d", n, held)
	}

	// Expiry: once g1 and g4 are past retention, a commit that needs
	// their room expires them and goes through.
	clk.add(time.Hour - time.Millisecond)
	if err := o.Commit("g5", nil); !errors.Is(err, ErrOffsetsFull) {
		t.Fatalf("g5 before retention: %v", err)
	}
	clk.add(time.Millisecond)
	mustCommit(t, o, "g5", fatOffsets("a", 64)...)
	groupsAre(t, o, "g5")
	bytesAre(t, o)
}

// TestOffsetsOverBudgetAtOpen: a store holding more than a lowered
// MaxOffsetBytes opens and serves what it holds; commits that do not
// grow the offsets are accepted, others refused until room is made.
func TestOffsetsOverBudgetAtOpen(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	s := mustOpen(t, cfg)
	o := s.Offsets()
	mustCommit(t, o, "g1", fatOffsets("a", 64)...)
	mustCommit(t, o, "g2", fatOffsets("a", 64)...)
	held := o.Bytes()
	s.Close()

	cfg.MaxOffsetBytes = held / 4
	s = mustOpen(t, cfg)
	defer s.Close()
	o = s.Offsets()
	if n := bytesAre(t, o); n != held {
		t.Fatalf("reopened with %d bytes, held %d", n, held)
	}
	if off, meta, ok := o.Fetch("g2", "a", 63); !ok || off != 1 || len(meta) != DefaultMaxOffsetMetadata {
		t.Fatalf("g2 a/63: %d, %d bytes of metadata, %v", off, len(meta), ok)
	}
	mustCommit(t, o, "g1", GroupOffset{"a", 0, 2, strings.Repeat("m", DefaultMaxOffsetMetadata)})
	mustCommit(t, o, "g1", GroupOffset{"a", 0, 3, ""})
	for _, c := range []struct {
		group string
		off   GroupOffset
	}{
		{"g1", GroupOffset{"a", 64, 1, ""}},  // a new partition
		{"g3", GroupOffset{"a", 0, 1, ""}},   // a new group
		{"g1", GroupOffset{"a", 0, 4, "m+"}}, // longer metadata than held
	} {
		if err := o.Commit(c.group, []GroupOffset{c.off}); !errors.Is(err, ErrOffsetsFull) {
			t.Fatalf("%s %v over the budget: %v", c.group, c.off, err)
		}
	}
	mustCommit(t, o, "g1", GroupOffset{"a", 0, 5, ""})
	if err := o.DeleteGroup("g2"); err != nil {
		t.Fatal(err)
	}
	if n := bytesAre(t, o); n >= held/2 {
		t.Fatalf("%d bytes after deleting half", n)
	}
}
