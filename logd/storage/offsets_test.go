package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOffsetStore(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	cfg.MaxGroups = 3
	s := mustOpen(t, cfg)
	o := s.Offsets()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(o.Commit("g1", []GroupOffset{{"a", 0, 10, "m"}, {"a", 1, 20, ""}, {"b", 0, 5, "x"}}))
	must(o.Commit("g1", []GroupOffset{{"a", 0, 11, "m2"}}))
	must(o.Commit("g2", []GroupOffset{{"a", 0, 1, ""}}))
	must(o.Commit("g3", nil))
	if err := o.Commit("g4", []GroupOffset{{"a", 0, 1, ""}}); !errors.Is(err, ErrTooManyGroups) {
		t.Fatalf("fourth group: %v", err)
	}
	if err := o.Commit("g1", []GroupOffset{{"a", 0, 1, strings.Repeat("m", 4097)}}); !errors.Is(err, ErrMetadataTooLarge) {
		t.Fatalf("large metadata: %v", err)
	}
	withB := true
	check := func(o *OffsetStore) {
		t.Helper()
		if off, meta, ok := o.Fetch("g1", "a", 0); !ok || off != 11 || meta != "m2" {
			t.Fatalf("g1 a/0: %d %q %v", off, meta, ok)
		}
		if _, _, ok := o.Fetch("g1", "a", 7); ok {
			t.Fatal("never committed, yet found")
		}
		want := []GroupOffset{{"a", 0, 11, "m2"}, {"a", 1, 20, ""}, {"b", 0, 5, "x"}}
		if !withB {
			want = want[:2]
		}
		if got := o.All("g1"); !slices.Equal(got, want) {
			t.Fatalf("All(g1) = %v", got)
		}
	}
	check(o)
	must(o.DeleteGroup("g3"))
	s.Close()

	s = mustOpen(t, cfg)
	o = s.Offsets()
	check(o)
	if g := o.Groups(); !slices.Equal(g, []string{"g1", "g2"}) {
		t.Fatalf("groups %v", g)
	}
	must(s.CreateTopic("b", 1, TopicConfig{}))
	must(s.DeleteTopic("b"))
	if _, _, ok := o.Fetch("g1", "b", 0); ok {
		t.Fatal("offsets of a deleted topic kept")
	}
	withB = false
	s.Close()

	// A torn tail: every cut of the last record keeps the records before.
	path := filepath.Join(cfg.Dir, offsetsDir, offsetsFile)
	s = mustOpen(t, cfg)
	must(s.Offsets().Commit("g2", []GroupOffset{{"a", 0, 99, "last"}}))
	s.Close()
	full, _ := os.ReadFile(path)
	last := len(encodeCommit(nil, "g2", clk.ms(), []GroupOffset{{"a", 0, 99, "last"}}))
	for cut := len(full) - last; cut < len(full); cut++ {
		os.WriteFile(path, full[:cut], 0o644)
		s = mustOpen(t, cfg)
		if off, _, _ := s.Offsets().Fetch("g2", "a", 0); off != 1 {
			t.Fatalf("cut at %d: g2 a/0 = %d, want 1", cut, off)
		}
		check(s.Offsets())
		s.Close()
		if st, _ := os.Stat(path); st.Size() != int64(len(full)-last) {
			t.Fatalf("cut at %d: file not truncated (%d bytes)", cut, st.Size())
		}
	}
	// Garbage after the records is dropped.
	os.WriteFile(path, append(full, "garbage!"...), 0o644)
	s = mustOpen(t, cfg)
	if off, _, _ := s.Offsets().Fetch("g2", "a", 0); off != 99 {
		t.Fatalf("g2 a/0 = %d after garbage", off)
	}
	s.Close()
}

func TestOffsetStoreRewrite(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	s := mustOpen(t, cfg)
	o := s.Offsets()
	meta := strings.Repeat("x", 1000)
	for i := range 3000 {
		if err := o.Commit(fmt.Sprint("g", i%3), []GroupOffset{{"t", int32(i % 2), int64(i), meta}}); err != nil {
			t.Fatal(err)
		}
	}
	o.mu.Lock()
	size := o.size
	o.mu.Unlock()
	if size > 2*offsetsMinFile {
		t.Fatalf("offsets log is %d bytes for 6 live offsets", size)
	}
	// Rewrite now, so that the file holds only rewritten records.
	err := rewriteNow(o)
	o.mu.Lock()
	size = o.size
	o.mu.Unlock()
	if err != nil || size > 10<<10 {
		t.Fatalf("rewrite: %v, %d bytes", err, size)
	}
	s.Close()
	clk.add(10 * time.Minute)
	s = mustOpen(t, cfg)
	defer s.Close()
	for i := 2994; i < 3000; i++ {
		if off, _, ok := s.Offsets().Fetch(fmt.Sprint("g", i%3), "t", int32(i%2)); !ok || off != int64(i) {
			t.Fatalf("offset %d: %d %v", i, off, ok)
		}
	}
	// The rewritten records keep the commits' time.
	clk.add(DefaultOffsetsRetention - 10*time.Minute - time.Millisecond)
	if n, err := s.Offsets().Expire(clk.now()); n != 0 || err != nil {
		t.Fatalf("expired before retention: %d, %v", n, err)
	}
	clk.add(time.Millisecond)
	if n, err := s.Offsets().Expire(clk.now()); n != 3 || err != nil {
		t.Fatalf("expired at retention: %d, %v", n, err)
	}
}
