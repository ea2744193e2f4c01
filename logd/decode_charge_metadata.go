package logd

import "github.com/twmb/franz-go/pkg/kmsg"

// metadataPartitionCost is what answering a Metadata request costs
// for each partition it lists: its response struct, its replica and ISR
// slices and its encoding (measured, TestMetadataChargeCoversPartitions:
// about 375 bytes).
const metadataPartitionCost = 512

// metadataCreateCost is what an unknown topic named by a Metadata
// request and created costs beyond its partitions' answers: its answer
// and the log line. Creating it allocates the store's state of the
// topic too, which stays (bounded by MaxTopics), as a CreateTopics'
// does, not charged to a request.
const metadataCreateCost = 4 << 10

// metadataCharge is what a Metadata frame's answer costs beyond its
// decoding: a request for all topics lists every partition the server
// holds; one naming topics lists those topics' partitions (each topic
// once, however often named: at most every partition held) and, for a
// name not known, nothing when it is not created, else the topic
// created with DefaultPartitions. Scanning the names allocates nothing;
// a frame that does not scan is charged as a request for all topics
// (kmsg will refuse it).
func (s *Server) metadataCharge(frame []byte) int64 {
	version := int16(frame[2])<<8 | int16(frame[3])
	if !supports(kmsg.Metadata.Int16(), version) {
		return 0 // not decoded
	}
	// The count of partitions held walks every topic under the store's
	// lock (the one Produce and Fetch take per partition): it is taken
	// only where the charge uses it.
	sc := newScanner(frame, version >= 9)
	topics := sc.array()
	if topics < 0 || version == 0 && topics == 0 {
		return int64(s.store.PartitionCount()) * metadataPartitionCost
	}
	var known, unknown int64
	for range topics {
		name := sc.str()
		if !sc.r.Ok() {
			return int64(s.store.PartitionCount()) * metadataPartitionCost
		}
		if n, ok := s.store.TopicPartitions(name); ok {
			known += int64(n)
		} else {
			unknown++
		}
		sc.tags()
	}
	allow := version < 4
	if version >= 4 {
		allow = sc.r.Bool()
	}
	var n int64
	if known > 0 {
		n = min(known, int64(s.store.PartitionCount())) * metadataPartitionCost
	}
	if allow && !s.cfg.DisableAutoCreateTopics {
		n += unknown * (metadataCreateCost + int64(s.cfg.DefaultPartitions)*metadataPartitionCost)
	}
	return n
}
