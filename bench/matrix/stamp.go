package matrix

import (
	"encoding/binary"
	"time"
)

// StampSize is the head of every payload: the message's sequence number
// and the time it was meant to be sent (not the time it was: an open-loop
// run that falls behind charges the wait to the message, so no
// coordinated omission), nanoseconds since the run's clock started.
const StampSize = 16

var clockBase = time.Now()

// now is the run's monotonic clock, nanoseconds.
func now() int64 { return int64(time.Since(clockBase)) }

func stamp(p []byte, seq uint64, at int64) {
	binary.LittleEndian.PutUint64(p, seq)
	binary.LittleEndian.PutUint64(p[8:], uint64(at))
}

func unstamp(p []byte) (seq uint64, at int64, ok bool) {
	if len(p) < StampSize {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint64(p), int64(binary.LittleEndian.Uint64(p[8:])), true
}
