package logd

import "testing"

// groupTally follows what the members of a client's consumer group
// deliver (the sarama and kafka-go group tests): which produced records
// arrived, by whom, and the offsets the test has seen committed.
type groupTally struct {
	produced    map[string]bool // value → delivered yet
	committed   map[int32]int64 // partition → offset, checked through OffsetFetch
	deliveredBy map[string]int  // member → records
}

func newGroupTally() *groupTally {
	return &groupTally{produced: map[string]bool{}, committed: map[int32]int64{}, deliveredBy: map[string]int{}}
}

// record takes a record event, failing on one delivered again after its
// offset was committed or one never produced.
func (g *groupTally) record(t *testing.T, what string, e groupEvent) {
	t.Helper()
	if e.offset < g.committed[e.partition] {
		t.Fatalf("%s: %s got %d/%d again, after offset %d was committed", what, e.member, e.partition, e.offset, g.committed[e.partition])
	}
	if _, ok := g.produced[e.value]; !ok {
		t.Fatalf("%s: %s got a record never produced: %d/%d %q", what, e.member, e.partition, e.offset, e.value)
	}
	g.produced[e.value] = true
	g.deliveredBy[e.member]++
}

// allDelivered reports whether every produced record has arrived.
func (g *groupTally) allDelivered() bool {
	for _, ok := range g.produced {
		if !ok {
			return false
		}
	}
	return true
}
