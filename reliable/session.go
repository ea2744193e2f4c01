package reliable

import "time"

// sessionRandBits is how many low bits of a session number are random;
// the bits above hold the publisher's start time in Unix milliseconds.
const sessionRandBits = 22

// NewSession draws a session number for a publisher starting at now:
// its start time in Unix milliseconds in the high 42 bits (good until
// the year 2109), random low bits. Ordering sessions by number orders
// them by start time, so a receiver can tell a restarted publisher from
// a stale one, and knows whether it was listening when a stream began.
func NewSession(now time.Time, r Rand) uint64 {
	return uint64(now.UnixMilli())<<sessionRandBits | r.Uint64()&(1<<sessionRandBits-1)
}

// SessionStart is the start time a session number carries.
func SessionStart(session uint64) time.Time {
	return time.UnixMilli(int64(session >> sessionRandBits))
}
