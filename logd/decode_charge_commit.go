package logd

import "github.com/twmb/franz-go/pkg/kmsg"

// Per-item costs of an OffsetCommit, decoded and answered: a topic and
// a partition are their kmsg structs, their answers' and what the
// coordinator makes for them (measured: a first commit of partitions
// of topics that exist, about 950 bytes a partition,
// TestOffsetCommitOfManyPartitionsAnswered; TestDecodeChargeCovers). A
// consumer commits every partition it reads, 18 to 20 bytes each on
// the wire: at 192 times its frame, a commit of 2000 partitions took
// 7 MiB, more than a small budget holds.
const (
	commitTopicCost     = 768
	commitPartitionCost = 1536
)

// scanOffsetCommit walks an OffsetCommit frame of a supported version
// (2 to 8; others are not decoded) and returns its decoding's and
// answer's cost.
func scanOffsetCommit(frame []byte, version int16) (int64, bool) {
	if !supports(kmsg.OffsetCommit.Int16(), version) {
		return requestCost, true
	}
	sc := newScanner(frame, version >= 8)
	sc.str()     // group
	sc.r.Int32() // generation
	sc.str()     // member id
	if version >= 7 {
		sc.str() // instance id
	}
	if version <= 4 {
		sc.r.Int64() // retention time
	}
	topics := sc.array()
	for range max(topics, 0) {
		if !sc.r.Ok() {
			break
		}
		sc.cost += commitTopicCost
		sc.str()
		partitions := sc.array()
		for range max(partitions, 0) {
			if !sc.r.Ok() {
				break
			}
			sc.cost += commitPartitionCost
			sc.r.Int32() // partition
			sc.r.Int64() // offset
			if version >= 6 {
				sc.r.Int32() // leader epoch
			}
			sc.str() // metadata
			sc.tags()
		}
		sc.tags()
	}
	sc.tags()
	return sc.cost, sc.r.Ok()
}
