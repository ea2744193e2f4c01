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
// million errors). So a request is charged, against a budget of the
// same size as its frame's (MaxInFlightRequestBytes) but its own
// (Server.decodeMem, see conn.chargeDecode), what decoding and
// answering it may allocate, before it is decoded, and holds it until
// its answer is encoded:
//
//   - a Produce, the one request whose frames are large by nature (its
//     record sets, which decoding does not copy), and a Fetch, whose
//     partitions take tens of bytes on the wire and about 1 KiB each
//     decoded and answered (a consumer names every partition it reads:
//     at 192 times its frame, a Fetch of 2,000 partitions took more than
//     a small budget holds), by counting their topics, partitions, names
//     and tags with a scan of the frame that allocates nothing
//     (FuzzScanAgrees keeps the scans in step with kmsg); an
//     OffsetCommit likewise (a consumer commits every partition it
//     reads); a JoinGroup and a SyncGroup likewise, their metadata and
//     assignments (bytes kmsg does not copy) at their size (a JoinGroup
//     gives that part back, with its frame, once it waits for its
//     group, which holds a copy: conn.joinWaiting); a ListOffsets (a consumer asks every partition
//     it reads), a CreateTopics and a DescribeGroups likewise, their
//     elements costing more than a flat factor of their frame charged
//     (decode_charge_admin.go);
//   - any other request at decodeFactor times its frame: such requests
//     are small (a few hundred bytes to a few MiB) and scanning each
//     API's layout would be a second decoder to keep in step with kmsg.
//
// A request whose charge could never fit the budget closes the
// connection (a FrameError, logged): with the defaults that is a request
// not scanned over about 4 MiB. Kafka
// accepts socket.request.max.bytes
// for every API, but decodes into the JVM heap with no such bound.

// decodeFactor bounds what decoding and answering a request not
// scanned allocates, per byte of its frame. TestDecodeChargeCovers
// measures it for every supported API and version, with arrays of empty
// elements and tag sections of unknown tags: decoding takes at most 41
// (unknown tags) or 24 (Metadata's topics).
const decodeFactor = 64

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
// beyond the frame itself. A Produce or Fetch frame that does not scan
// is an error: kmsg would not decode it either.
func decodeCharge(frame []byte) (int64, error) {
	key, version := int16(frame[0])<<8|int16(frame[1]), int16(frame[2])<<8|int16(frame[3])
	var (
		n  int64
		ok bool
	)
	switch key {
	case kmsg.Produce.Int16():
		n, ok = scanProduce(frame, version)
	case kmsg.Fetch.Int16():
		n, ok = scanFetch(frame, version)
	case kmsg.JoinGroup.Int16():
		n, ok = scanJoinGroup(frame, version)
	case kmsg.SyncGroup.Int16():
		n, ok = scanSyncGroup(frame, version)
	case kmsg.OffsetCommit.Int16():
		n, ok = scanOffsetCommit(frame, version)
	case kmsg.ListOffsets.Int16():
		n, ok = scanListOffsets(frame, version)
	case kmsg.CreateTopics.Int16():
		n, ok = scanCreateTopics(frame, version)
	case kmsg.DescribeGroups.Int16():
		n, ok = scanDescribeGroups(frame, version)
	default:
		return requestCost + decodeFactor*int64(len(frame)), nil
	}
	if !ok {
		return 0, &FrameError{Key: key, Version: version, Reason: "malformed " + kmsg.NameForKey(key) + " request"}
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
	sc := newScanner(frame, version >= 9)
	sc.str() // transactional id
	sc.r.Int16()
	sc.r.Int32()
	topics := sc.array()
	for range max(topics, 0) {
		if !sc.r.Ok() {
			break
		}
		sc.cost += produceTopicCost
		sc.str()
		partitions := sc.array()
		for range max(partitions, 0) {
			if !sc.r.Ok() {
				break
			}
			sc.cost += producePartitionCost
			sc.r.Int32()
			sc.bytes()
			sc.tags()
		}
		sc.tags()
	}
	sc.tags()
	return sc.cost, sc.r.Ok()
}

// scanner walks a request frame's body as kmsg decodes it, adding up
// what the decoding copies and makes (cost); r stops being Ok where
// kmsg would fail. A scanner whose r has no Src (nothing scanned) is Ok.
type scanner struct {
	r        kbin.Reader
	flexible bool
	cost     int64
}

// newScanner starts after the request header (its client id and, in a
// flexible version, its tags), the header's strings counted. It
// returns a value, so that the scan, kept in its caller's local,
// allocates nothing.
func newScanner(frame []byte, flexible bool) scanner {
	sc := scanner{r: kbin.Reader{Src: frame[8:]}, flexible: flexible, cost: requestCost}
	if l := sc.r.Int16(); l > 0 { // the client id
		sc.r.Span(int(l))
		sc.cost += int64(l)
	}
	if flexible {
		sc.tags()
	}
	return sc
}

// str skips a (nullable) string, counting its copy, and returns its
// bytes (in the frame).
func (sc *scanner) str() []byte {
	var l int
	if sc.flexible {
		l = int(sc.r.Uvarint()) - 1
	} else {
		l = int(sc.r.Int16())
	}
	if l > 0 {
		sc.cost += int64(l)
		return sc.r.Span(l)
	}
	return nil
}

// bytes skips a (nullable) byte array, which decoding does not copy.
func (sc *scanner) bytes() {
	var l int
	if sc.flexible {
		l = int(sc.r.Uvarint()) - 1
	} else {
		l = int(sc.r.Int32())
	}
	if l > 0 {
		sc.r.Span(l)
	}
}

// array reads an array's length (negative: null).
func (sc *scanner) array() int {
	if sc.flexible {
		return int(sc.r.CompactArrayLen())
	}
	return int(sc.r.ArrayLen())
}

// tags skips a flexible version's tag section, counting each tag (a
// map entry, or a known tag's field decoded from its bytes).
func (sc *scanner) tags() {
	if !sc.flexible {
		return
	}
	for n := sc.r.Uvarint(); n > 0 && sc.r.Ok(); n-- {
		sc.r.Uvarint()
		l := int(sc.r.Uvarint())
		sc.r.Span(l)
		sc.cost += tagCost + int64(max(l, 0))
	}
}

// chargeError: a request's decoding's charge exceeds the whole budget,
// so it could never be granted.
func chargeError(frame []byte, charge, limit int64) error {
	key, version := int16(frame[0])<<8|int16(frame[1]), int16(frame[2])<<8|int16(frame[3])
	return &FrameError{Key: key, Version: version, Reason: fmt.Sprintf(
		"%d-byte request would take %d bytes of request memory decoded, more than MaxInFlightRequestBytes (%d)",
		len(frame), charge, limit)}
}

// decodeCharge is decodeCharge(frame) with what depends on the server:
// a Metadata request's answer lists the partitions of the topics it
// names (metadataCharge), up to every partition the server holds, so it
// is charged for them too, at most the whole budget: a client cannot
// make that answer smaller, so it waits for the memory rather than
// being refused (a frame whose own charge is past the budget still is).
func (s *Server) decodeCharge(frame []byte) (int64, error) {
	n, err := decodeCharge(frame)
	if err != nil || int16(frame[0])<<8|int16(frame[1]) != kmsg.Metadata.Int16() {
		return n, err
	}
	if limit := s.decodeMem.limit; n <= limit { // a frame too large still closes the connection
		n = min(n+s.metadataCharge(frame), limit)
	}
	return n, nil
}
