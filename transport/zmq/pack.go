package zmq

import (
	"encoding/binary"
	"fmt"

	"github.com/brokerless/brokerless/transport"
)

// A packed message's third frame holds count messages of one stream,
// back to back, each:
//
//	zigzag varint  time - the header's time, in nanoseconds
//	uvarint        key length, key
//	uvarint        header count, then per header: uvarint name length,
//	               name, uvarint value length, value
//	uvarint        payload length, payload

// packEntryLen is at most how many bytes appendPackEntry appends for m.
func packEntryLen(m *transport.Message) int {
	return binary.MaxVarintLen64 + keyHeadersLen(m.Key, m.Headers) + uvarintLen(uint64(len(m.Payload))) + len(m.Payload)
}

// appendPackEntry appends m, whose time is t, to a pack body whose
// first message's time is base.
func appendPackEntry(b []byte, m *transport.Message, t, base int64) []byte {
	b = binary.AppendVarint(b, t-base)
	b = appendKeyHeaders(b, m.Key, m.Headers)
	return appendBytes(b, m.Payload)
}

// packEntry is one message read from a pack body.
type packEntry struct {
	time    int64
	key     []byte
	headers []transport.Header
	payload []byte
}

// packReader reads the messages of a pack body one at a time.
type packReader struct {
	body []byte
	base int64
	left uint64
}

// next reads the next message, appending its headers to hs[:0]. Its
// slices alias the body.
func (r *packReader) next(hs []transport.Header) (packEntry, error) {
	var e packEntry
	if r.left == 0 {
		return e, fmt.Errorf("%w: no message left", ErrBadPack)
	}
	d, n := varint(r.body)
	if n <= 0 {
		return e, fmt.Errorf("%w: bad time", ErrBadPack)
	}
	e.time = r.base + d
	rest := r.body[n:]
	var err error
	if e.key, e.headers, rest, err = readKeyHeaders(rest, hs[:0]); err != nil {
		return e, fmt.Errorf("%w: %v", ErrBadPack, err)
	}
	if e.payload, rest, err = readBytes(rest, "payload"); err != nil {
		return e, fmt.Errorf("%w: %v", ErrBadPack, err)
	}
	r.body = rest
	r.left--
	return e, nil
}

// checkPack reads every message of a pack body of count messages and
// reports the first that cannot be read, or bytes left after the last.
func checkPack(body []byte, count uint64) error {
	// Each message takes at least four bytes: more cannot be there.
	if count > uint64(len(body))/4 {
		return fmt.Errorf("%w: %d messages in %d bytes", ErrBadPack, count, len(body))
	}
	r := packReader{body: body, left: count}
	var hs []transport.Header
	for r.left > 0 {
		e, err := r.next(hs)
		if err != nil {
			return fmt.Errorf("message %d of %d: %w", count-r.left, count, err)
		}
		hs = e.headers
	}
	if len(r.body) != 0 {
		return fmt.Errorf("%w: %d bytes after the last message", ErrBadPack, len(r.body))
	}
	return nil
}
