package offbudget

import "fmt"

const (
	// EntryBytes is what a committed partition costs besides its topic
	// and metadata: its key and value in its group's map (about 110 to
	// 150 bytes in Go's maps, measured).
	EntryBytes = 128
	// GroupBytes is what a group costs besides its name: its entry in
	// the groups map, its times and its (empty) map.
	GroupBytes = 256
	// DefaultMax is the default budget (Kafka sets no bound).
	DefaultMax = 64 << 20
)

// Entry is what a committed partition of topic with metadata costs.
func Entry(topic, metadata string) int64 {
	return EntryBytes + int64(len(topic)+len(metadata))
}

// Group is what a group named name costs without its offsets.
func Group(name string) int64 { return GroupBytes + int64(len(name)) }

// Key names a committed partition.
type Key struct {
	Topic     string
	Partition int32
}

// Growth is how many bytes committing offs to group adds to the budget
// (negative if it frees some). cost gives an offset's partition and
// Entry; held the Entry of the offset the group holds for a partition
// (false: none); isNew says the group holds no offsets yet, so that its
// Group cost is added.
func Growth[T any](group string, isNew bool, offs []T, cost func(T) (Key, int64), held func(Key) (int64, bool)) int64 {
	var n int64
	if isNew {
		n = Group(group)
	}
	// The last commit of a partition named twice is the one kept.
	after := make(map[Key]int64, len(offs))
	for _, x := range offs {
		k, b := cost(x)
		after[k] = b
	}
	for k, b := range after {
		n += b
		if old, ok := held(k); ok {
			n -= old
		}
	}
	return n
}

// Check returns nil when a commit that adds n bytes to the held ones
// stays within max, or adds nothing; else an error wrapping full.
func Check(held, n, max int64, full error) error {
	if n > 0 && held+n > max {
		return fmt.Errorf("%w: %d bytes held, the commit adds %d, max %d", full, held, n, max)
	}
	return nil
}
