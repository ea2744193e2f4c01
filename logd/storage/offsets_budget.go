package storage

import (
	"errors"

	"github.com/brokerless/brokerless/logd/internal/offbudget"
)

// The byte budget of committed offsets (Config.MaxOffsetBytes),
// accounted as logd/internal/offbudget says (as groups.MemoryStore's
// is). The same count bounds the offsets log, whose rewrite holds one
// record per group and less than these bytes per partition. The
// accounting is a function of the offsets held, kept up to date by
// apply (offsets_live.go), so replaying the log on Open rebuilds it
// exactly.

// ErrOffsetsFull is returned by Commit for a commit that would take
// the offsets held past MaxOffsetBytes.
var ErrOffsetsFull = errors.New("storage: committed offsets over their byte budget (MaxOffsetBytes)")

func entryBytes(x GroupOffset) int64 { return offbudget.Entry(x.Topic, x.Metadata) }

func groupBytes(name string) int64 { return offbudget.Group(name) }

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
	return offbudget.Growth(group, g == nil, offs,
		func(x GroupOffset) (offbudget.Key, int64) {
			return offbudget.Key{Topic: x.Topic, Partition: x.Partition}, entryBytes(x)
		},
		func(k offbudget.Key) (int64, bool) {
			if g == nil {
				return 0, false
			}
			old, ok := g.offs[groupKey{k.Topic, k.Partition}]
			return entryBytes(old), ok
		})
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
	return offbudget.Check(o.bytes, o.growth(group, offs), o.maxBytes, ErrOffsetsFull)
}
