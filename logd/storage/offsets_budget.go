package storage

import (
	"errors"
	"fmt"
)

// The byte budget of committed offsets (Config.MaxOffsetBytes). Every
// group and every committed partition is accounted at about what it
// costs in memory: its strings plus the map entries and fields that
// hold them. The same count bounds the offsets log, whose rewrite holds
// one record per group and less than these bytes per partition. The
// accounting is a function of the offsets held, kept up to date by
// apply, so replaying the log on Open rebuilds it exactly.

const (
	// offsetEntryBytes is what a committed partition costs besides its
	// topic and metadata: its key and value in the group's map (about
	// 110 to 150 bytes in Go's maps, measured).
	offsetEntryBytes = 128
	// offsetGroupBytes is what a group costs besides its name: its
	// entry in the groups map, its times and its (empty) map.
	offsetGroupBytes = 256
)

// ErrOffsetsFull is returned by Commit for a commit that would take
// the offsets held past MaxOffsetBytes.
var ErrOffsetsFull = errors.New("storage: committed offsets over their byte budget (MaxOffsetBytes)")

func entryBytes(x GroupOffset) int64 {
	return offsetEntryBytes + int64(len(x.Topic)+len(x.Metadata))
}

func groupBytes(name string) int64 { return offsetGroupBytes + int64(len(name)) }

// Bytes returns the bytes the committed offsets are accounted at, the
// count MaxOffsetBytes bounds.
func (o *OffsetStore) Bytes() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.bytes
}

// growth is how many bytes committing offs to group would add to the
// budget (negative if it would free some). o.mu is held.
func (o *OffsetStore) growth(group string, offs []GroupOffset) int64 {
	g := o.groups[group]
	var n int64
	if g == nil {
		n = groupBytes(group)
	}
	// The last commit of a partition named twice is the one kept.
	after := make(map[groupKey]int64, len(offs))
	for _, x := range offs {
		after[groupKey{x.Topic, x.Partition}] = entryBytes(x)
	}
	for k, b := range after {
		n += b
		if g != nil {
			if old, ok := g.offs[k]; ok {
				n -= entryBytes(old)
			}
		}
	}
	return n
}

// fits returns nil when group may commit offs: it holds offsets or
// fewer than MaxGroups groups do, and the commit does not grow the
// offsets past MaxOffsetBytes. A commit that does not grow them is
// accepted even while they are over the budget (lowered since they were
// committed). o.mu is held.
func (o *OffsetStore) fits(group string, offs []GroupOffset) error {
	if _, ok := o.groups[group]; !ok && len(o.groups) >= o.maxGroups {
		return ErrTooManyGroups
	}
	if n := o.growth(group, offs); n > 0 && o.bytes+n > o.maxBytes {
		return fmt.Errorf("%w: %d bytes held, the commit adds %d, max %d", ErrOffsetsFull, o.bytes, n, o.maxBytes)
	}
	return nil
}
