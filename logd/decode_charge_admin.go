package logd

import "github.com/twmb/franz-go/pkg/kmsg"

// Per-item costs of a ListOffsets, a CreateTopics and a DescribeGroups,
// decoded and answered: their kmsg structs, their answers' (grown by
// append: up to about 5 times their final size), and what handling
// makes for them (an error message for each topic not created, a map
// entry for each config). Measured with TestDecodeChargeCovers' empty
// elements and TestListOffsetsOfManyPartitionsAnswered,
// TestCreateTopicsOfManyTopicsAnswered and
// TestDescribeGroupsOfManyGroupsAnswered. At a factor of their frame
// (160, 256, 64) a ListOffsets of every partition of two 1000-partition
// topics, a CreateTopics validating 1000 topics or a DescribeGroups of
// 6000 groups took more than a small budget holds (and the
// DescribeGroups allocated more than it was charged). What a DescribeGroups' answer carries of a
// group's state (its members' metadata and assignments) is the group's,
// bounded by MaxGroupBytes, and not charged here, as before.
const (
	listOffsetsTopicCost     = 512  // measured 332
	listOffsetsPartitionCost = 768  // measured 567
	createTopicCost          = 2560 // measured 1735
	createAssignmentCost     = 64   // measured 40, its replicas apart
	createConfigCost         = 256  // measured 178, distinct names
	describeGroupCost        = 512  // measured 358
)

// scanListOffsets walks a ListOffsets frame of a supported version (0
// to 7; others are not decoded) and returns its decoding's and answer's
// cost.
func scanListOffsets(frame []byte, version int16) (int64, bool) {
	if !supports(kmsg.ListOffsets.Int16(), version) {
		return requestCost, true
	}
	sc := newScanner(frame, version >= 6)
	sc.r.Int32() // replica id
	if version >= 2 {
		sc.r.Int8() // isolation level
	}
	topics := sc.array()
	for range max(topics, 0) {
		if !sc.r.Ok() {
			break
		}
		sc.cost += listOffsetsTopicCost
		sc.str()
		partitions := sc.array()
		for range max(partitions, 0) {
			if !sc.r.Ok() {
				break
			}
			sc.cost += listOffsetsPartitionCost
			sc.r.Int32() // partition
			if version >= 4 {
				sc.r.Int32() // current leader epoch
			}
			sc.r.Int64() // timestamp
			if version == 0 {
				sc.r.Int32() // max num offsets
			}
			sc.tags()
		}
		sc.tags()
	}
	sc.tags()
	return sc.cost, sc.r.Ok()
}

// scanCreateTopics walks a CreateTopics frame of a supported version (0
// to 7) and returns its decoding's and answer's cost; a replica
// assignment's replicas are an []int32 each.
func scanCreateTopics(frame []byte, version int16) (int64, bool) {
	if !supports(kmsg.CreateTopics.Int16(), version) {
		return requestCost, true
	}
	sc := newScanner(frame, version >= 5)
	topics := sc.array()
	for range max(topics, 0) {
		if !sc.r.Ok() {
			break
		}
		sc.cost += createTopicCost
		sc.str()
		sc.r.Int32() // partitions
		sc.r.Int16() // replication factor
		assignments := sc.array()
		for range max(assignments, 0) {
			if !sc.r.Ok() {
				break
			}
			sc.cost += createAssignmentCost
			sc.r.Int32() // partition
			if replicas := sc.array(); replicas > 0 {
				sc.r.Span(4 * replicas)
				sc.cost += 16 + 5*int64(replicas) // an []int32, its size class
			}
			sc.tags()
		}
		configs := sc.array()
		for range max(configs, 0) {
			if !sc.r.Ok() {
				break
			}
			sc.cost += createConfigCost
			sc.str() // name
			sc.str() // value
			sc.tags()
		}
		sc.tags()
	}
	sc.r.Int32() // timeout
	if version >= 1 {
		sc.r.Bool() // validate only
	}
	sc.tags()
	return sc.cost, sc.r.Ok()
}

// scanDescribeGroups walks a DescribeGroups frame of a supported
// version (0 to 5) and returns its decoding's and answer's cost.
func scanDescribeGroups(frame []byte, version int16) (int64, bool) {
	if !supports(kmsg.DescribeGroups.Int16(), version) {
		return requestCost, true
	}
	sc := newScanner(frame, version >= 5)
	groups := sc.array()
	for range max(groups, 0) {
		if !sc.r.Ok() {
			break
		}
		sc.cost += describeGroupCost
		sc.str()
	}
	if version >= 3 {
		sc.r.Bool() // include authorized operations
	}
	sc.tags()
	return sc.cost, sc.r.Ok()
}
