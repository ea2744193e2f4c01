package store

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"
)

// crockford is the base32 alphabet of ULIDs.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// monotonic is the last ULID NewID made: an ID made in the same
// millisecond is the last one plus one (ULID's monotonic mode), so IDs
// made one after the other in a process sort in the order they were made,
// not only by their millisecond.
var monotonic struct {
	sync.Mutex
	last [16]byte
	made bool // last is set
}

// NewID returns prefix + "_" + a ULID: 48 bits of milliseconds since the
// epoch and 80 bits, random for the first ID of a millisecond and one
// more than the previous ID's for the next ones, in Crockford base32, so
// IDs sort by creation time, e.g. "msg_01JDX8…". Rows inserted together
// (an event's deliveries, a burst of events) then have ids in their
// insertion order, and a claim or a completion of the earliest ones
// touches a few adjacent pages of the table and its indexes, not one
// page per row.
func NewID(prefix string, now time.Time) string {
	b := nextULID(uint64(now.UnixMilli()))
	out := make([]byte, 0, len(prefix)+1+26)
	out = append(out, prefix...)
	out = append(out, '_')
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	// 128 bits as 26 base32 digits: the first digit holds the top 3 bits.
	for i := 25; i >= 0; i-- {
		shift := uint(i * 5)
		var v uint64
		switch {
		case shift >= 64:
			v = hi >> (shift - 64)
		case shift > 59:
			v = lo>>shift | hi<<(64-shift)
		default:
			v = lo >> shift
		}
		out = append(out, crockford[v&31])
	}
	return string(out)
}

// nextULID returns the next ULID of millisecond ms (see monotonic).
func nextULID(ms uint64) [16]byte {
	monotonic.Lock()
	defer monotonic.Unlock()
	b := &monotonic.last
	if monotonic.made && binary.BigEndian.Uint64(b[:8])>>16 == ms && increment(b[6:]) {
		return *b
	}
	monotonic.made = true
	binary.BigEndian.PutUint64(b[:8], ms<<16)
	_, _ = rand.Read(b[6:])
	return *b
}

// increment adds one to the big-endian number b, false if it overflowed.
func increment(b []byte) bool {
	for i := len(b) - 1; i >= 0; i-- {
		b[i]++
		if b[i] != 0 {
			return true
		}
	}
	return false
}
