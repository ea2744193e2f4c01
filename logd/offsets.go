package logd

import (
	"github.com/brokerless/brokerless/logd/groups"
	"github.com/brokerless/brokerless/logd/storage"
)

// groupOffsets gives the coordinator the store's durable committed
// offsets (fdatasynced before an OffsetCommit is answered).
type groupOffsets struct{ s *storage.OffsetStore }

var (
	_ groups.OffsetStore = groupOffsets{}
	_ groups.GroupLister = groupOffsets{}
)

func (g groupOffsets) Commit(group string, offsets []groups.Committed) error {
	out := make([]storage.GroupOffset, len(offsets))
	for i, o := range offsets {
		out[i] = storage.GroupOffset(o)
	}
	return g.s.Commit(group, out)
}

func (g groupOffsets) Fetch(group, topic string, partition int32) (int64, string, bool) {
	return g.s.Fetch(group, topic, partition)
}

func (g groupOffsets) All(group string) []groups.Committed {
	all := g.s.All(group)
	out := make([]groups.Committed, len(all))
	for i, o := range all {
		out[i] = groups.Committed(o)
	}
	return out
}

func (g groupOffsets) Groups() []string { return g.s.Groups() }
