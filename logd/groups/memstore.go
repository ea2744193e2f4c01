package groups

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brokerless/brokerless/logd/internal/offbudget"
)

// MemoryStore is an OffsetStore (and GroupLister) in memory: for tests,
// and for a logd that need not keep offsets across restarts. It holds
// whatever it is given within a byte budget, accounted as logd's
// durable store accounts Storage.MaxOffsetBytes (each group 256 bytes
// and its name, each committed partition 128 bytes and its topic and
// metadata); the Coordinator only gives it partitions that exist.
type MemoryStore struct {
	mu       sync.Mutex
	groups   map[string]map[partitionKey]Committed
	maxBytes int64
	bytes    int64 // what the offsets held are accounted at
}

type partitionKey struct {
	topic     string
	partition int32
}

// DefaultMaxOffsetBytes is NewMemoryStore's budget, the default of
// logd's Storage.MaxOffsetBytes.
const DefaultMaxOffsetBytes = offbudget.DefaultMax

// ErrOffsetsFull is the refusal of a commit that would take a
// MemoryStore's offsets past its budget; Commit's error wraps it and
// kerr.InvalidCommitOffsetSize, the code it is answered with (as logd's
// durable store is for Storage.MaxOffsetBytes).
var ErrOffsetsFull = errors.New("groups: committed offsets over the MemoryStore's byte budget")

// NewMemoryStore returns an empty MemoryStore whose offsets may take
// DefaultMaxOffsetBytes.
func NewMemoryStore() *MemoryStore { return NewMemoryStoreMax(DefaultMaxOffsetBytes) }

// NewMemoryStoreMax returns an empty MemoryStore whose offsets may take
// maxBytes (at least 1).
func NewMemoryStoreMax(maxBytes int64) *MemoryStore {
	return &MemoryStore{groups: make(map[string]map[partitionKey]Committed), maxBytes: max(maxBytes, 1)}
}

// Commit stores the offsets, all or none. A commit that would take the
// offsets held past the budget is refused (ErrOffsetsFull, answered
// INVALID_COMMIT_OFFSET_SIZE); one that adds no bytes never is.
func (s *MemoryStore) Commit(group string, offsets []Committed) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[group]
	n := offbudget.Growth(group, g == nil, offsets,
		func(o Committed) (offbudget.Key, int64) {
			return offbudget.Key{Topic: o.Topic, Partition: o.Partition}, offbudget.Entry(o.Topic, o.Metadata)
		},
		func(k offbudget.Key) (int64, bool) {
			old, ok := g[partitionKey{k.Topic, k.Partition}]
			return offbudget.Entry(old.Topic, old.Metadata), ok
		})
	if err := offbudget.Check(s.bytes, n, s.maxBytes, ErrOffsetsFull); err != nil {
		return fmt.Errorf("%w: %w", kerr.InvalidCommitOffsetSize, err)
	}
	if g == nil {
		g = make(map[partitionKey]Committed)
		s.groups[group] = g
	}
	for _, o := range offsets {
		g[partitionKey{o.Topic, o.Partition}] = o
	}
	s.bytes += n
	return nil
}

// Bytes returns the bytes the offsets held are accounted at.
func (s *MemoryStore) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
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
