package logd

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Decoding a request allocates more than its frame: kmsg makes a Go
// struct for every array element (24 to 64 bytes for an element that
// takes 2 or 3 bytes on the wire), a string for every name and a map
// entry for every unknown tag. A Metadata request of 100 MiB naming
// millions of empty topics decodes into about 2.4 GB. Answering it
// allocates more again: a response struct for every element (a Produce
// naming a million partitions without records is answered with a
// million errors). So a request is charged, against the same budget as
// its frame (MaxInFlightRequestBytes), what decoding and answering it
// may allocate, before it is decoded, and holds it until its answer is
// encoded:
//
//   - a Produce, the one request whose frames are large by nature (its
//     record sets, which decoding does not copy), by counting its topics,
//     partitions, names and tags with a scan of the frame that allocates
//     nothing;
//   - any other request at decodeFactor (or its API's entry in
//     handleFactor) times its frame: such requests are small (a few
//     hundred bytes to a few MiB) and scanning each API's layout would
//     be a second decoder to keep in step with kmsg.
//
// A request whose frame and charge could never fit the budget closes the
// connection (a FrameError, logged): with the defaults that is a request
// other than Produce over 3.9 MiB, a CreateTopics over 1 MiB). Kafka
// accepts socket.request.max.bytes
// for every API, but decodes into the JVM heap with no such bound.

// decodeFactor bounds what decoding and answering a request other than
// Produce allocates, per byte of its frame. TestDecodeChargeCovers
// measures it for every supported API and version, with arrays of empty
// elements and tag sections of unknown tags: decoding takes at most 41
// (unknown tags) or 24 (Metadata's topics); the APIs whose answers take
// more have their own factor in handleFactor (measured: Fetch and
// OffsetCommit 133, CreateTopics 174, ListOffsets 107).
const decodeFactor = 64

var handleFactor = map[int16]int64{
	kmsg.Fetch.Int16():        192,
	kmsg.OffsetCommit.Int16(): 192,
	kmsg.CreateTopics.Int16(): 256,
	kmsg.ListOffsets.Int16():  160,
}

// Per-item costs of a Produce request, decoded and answered: a topic
// and a partition are their kmsg structs and their answers' (measured,
// decoded and answered with errors: 384 and 552 bytes); an unknown tag
// is a map entry with its share of the map's growth (measured at about
// 41 bytes a tag byte, 3 bytes a tag); the request itself, its struct
// and the header's strings.
const (
	produceTopicCost     = 512
	producePartitionCost = 768
	tagCost              = 160
	requestCost          = 16 << 10
)

// decodeCharge is the request memory a frame's decoding may allocate,
// beyond the frame itself. A Produce frame that does not scan is an
// error: kmsg would not decode it either.
func decodeCharge(frame []byte) (int64, error) {
	key, version := int16(frame[0])<<8|int16(frame[1]), int16(frame[2])<<8|int16(frame[3])
	if key != kmsg.Produce.Int16() {
		factor, ok := handleFactor[key]
		if !ok {
			factor = decodeFactor
		}
		return requestCost + factor*int64(len(frame)), nil
	}
	n, ok := scanProduce(frame, version)
	if !ok {
		return 0, &FrameError{Key: key, Version: version, Reason: "malformed produce request"}
	}
	return n, nil
}

// scanProduce walks a Produce frame of a supported version (3 to 9;
// others are not decoded) and returns its decoding's cost: names and
// strings copied, topics, partitions and tags made.
func scanProduce(frame []byte, version int16) (int64, bool) {
	if !supports(kmsg.Produce.Int16(), version) {
		return requestCost, true
	}
	flexible := version >= 9
	r := kbin.Reader{Src: frame[8:]}
	cost := int64(requestCost)
	if l := r.Int16(); l > 0 { // the client id
		r.Span(int(l))
		cost += int64(l)
	}
	str := func() {
		var l int
		if flexible {
			l = int(r.Uvarint()) - 1
		} else {
			l = int(r.Int16())
		}
		if l > 0 {
			r.Span(l)
			cost += int64(l)
		}
	}
	bytes := func() {
		var l int
		if flexible {
			l = int(r.Uvarint()) - 1
		} else {
			l = int(r.Int32())
		}
		if l > 0 {
			r.Span(l)
		}
	}
	array := func() int {
		if flexible {
			return int(r.CompactArrayLen())
		}
		return int(r.ArrayLen())
	}
	tags := func() {
		if !flexible {
			return
		}
		for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
			r.Uvarint()
			r.Span(int(r.Uvarint()))
			cost += tagCost
		}
	}
	if flexible {
		tags() // the header's
	}
	str() // transactional id
	r.Int16()
	r.Int32()
	topics := array()
	for range max(topics, 0) {
		if !r.Ok() {
			break
		}
		cost += produceTopicCost
		str()
		partitions := array()
		for range max(partitions, 0) {
			if !r.Ok() {
				break
			}
			cost += producePartitionCost
			r.Int32()
			bytes()
			tags()
		}
		tags()
	}
	tags()
	return cost, r.Ok()
}

// chargeError: a request's frame and its decoding's charge exceed the
// whole request-memory budget, so it could never be granted.
func chargeError(frame []byte, charge, limit int64) error {
	key, version := int16(frame[0])<<8|int16(frame[1]), int16(frame[2])<<8|int16(frame[3])
	return &FrameError{Key: key, Version: version, Reason: fmt.Sprintf(
		"%d-byte request would take %d bytes of request memory decoded, more than MaxInFlightRequestBytes (%d)",
		len(frame), int64(len(frame))+charge, limit)}
}
