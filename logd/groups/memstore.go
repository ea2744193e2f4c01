package groups

import (
	"cmp"
	"slices"
	"sync"
)

// MemoryStore is an OffsetStore (and GroupLister) in memory: for tests,
// and for a logd that need not keep offsets across restarts. It holds
// whatever it is given; the Coordinator only gives it partitions that
// exist.
type MemoryStore struct {
	mu     sync.Mutex
	groups map[string]map[partitionKey]Committed
}

type partitionKey struct {
	topic     string
	partition int32
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{groups: make(map[string]map[partitionKey]Committed)}
}

// Commit stores the offsets; it never fails.
func (s *MemoryStore) Commit(group string, offsets []Committed) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[group]
	if g == nil {
		g = make(map[partitionKey]Committed)
		s.groups[group] = g
	}
	for _, o := range offsets {
		g[partitionKey{o.Topic, o.Partition}] = o
	}
	return nil
}

// Fetch returns a partition's committed offset.
func (s *MemoryStore) Fetch(group, topic string, partition int32) (int64, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.groups[group][partitionKey{topic, partition}]
	return o.Offset, o.Metadata, ok
}

// All returns the group's committed offsets sorted by topic and
// partition.
func (s *MemoryStore) All(group string) []Committed {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Committed, 0, len(s.groups[group]))
	for _, o := range s.groups[group] {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b Committed) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// Groups lists the groups with committed offsets, sorted.
func (s *MemoryStore) Groups() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.groups))
	for g := range s.groups {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}
