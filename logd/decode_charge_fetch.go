package logd

import "github.com/twmb/franz-go/pkg/kmsg"

// Per-item costs of a Fetch request, decoded and answered: a topic and
// a partition are their kmsg structs, their answers' and what the
// handler and the encoding make for them (measured: about 410 bytes a
// topic of no partitions, TestDecodeChargeCovers, and 755 a partition
// that exists, TestFetchOfManyPartitionsAnswered); a forgotten topic
// and its partitions are only decoded.
const (
	fetchTopicCost              = 768
	fetchPartitionCost          = 1024
	fetchForgottenTopicCost     = 128
	fetchForgottenPartitionCost = 16
)

// scanFetch walks a Fetch frame of a supported version (4 to 12;
// others are not decoded) and returns its decoding's and answer's cost.
func scanFetch(frame []byte, version int16) (int64, bool) {
	if !supports(kmsg.Fetch.Int16(), version) {
		return requestCost, true
	}
	sc := newScanner(frame, version >= 12)
	sc.r.Int32() // replica id
	sc.r.Int32() // max wait
	sc.r.Int32() // min bytes
	sc.r.Int32() // max bytes
	sc.r.Int8()  // isolation level
	if version >= 7 {
		sc.r.Int32() // session id
		sc.r.Int32() // session epoch
	}
	topics := sc.array()
	for range max(topics, 0) {
		if !sc.r.Ok() {
			break
		}
		sc.cost += fetchTopicCost
		sc.str()
		partitions := sc.array()
		for range max(partitions, 0) {
			if !sc.r.Ok() {
				break
			}
			sc.cost += fetchPartitionCost
			sc.r.Int32() // partition
			if version >= 9 {
				sc.r.Int32() // current leader epoch
			}
			sc.r.Int64() // fetch offset
			if version >= 12 {
				sc.r.Int32() // last fetched epoch
			}
			if version >= 5 {
				sc.r.Int64() // log start offset
			}
			sc.r.Int32() // partition max bytes
			sc.tags()
		}
		sc.tags()
	}
	if version >= 7 {
		forgotten := sc.array()
		for range max(forgotten, 0) {
			if !sc.r.Ok() {
				break
			}
			sc.cost += fetchForgottenTopicCost
			sc.str()
			partitions := sc.array()
			if partitions > 0 {
				sc.r.Span(4 * partitions)
				sc.cost += fetchForgottenPartitionCost * int64(partitions)
			}
			sc.tags()
		}
	}
	if version >= 11 {
		sc.str() // rack id
	}
	sc.tags()
	return sc.cost, sc.r.Ok()
}
