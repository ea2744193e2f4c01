package faultnet

import (
	"fmt"
	"time"
)

// StreamFaults describes what a [Conn] does to the byte stream of a
// net.Conn.
type StreamFaults struct {
	// Seed seeds the PRNG that sizes reads.
	Seed int64
	// Delay makes the bytes of each Write readable by the peer only this
	// long after the Write (write side).
	Delay time.Duration
	// MaxChunk, if positive, makes every Read return at most a random
	// 1..MaxChunk bytes, to exercise partial reads and framing.
	MaxChunk int
	// CutAfter, if positive, drops the connection abruptly (a TCP reset
	// where the conn supports SetLinger) once this many bytes have been
	// written and read in total. No more than CutAfter bytes ever pass.
	CutAfter int64
}

func (f StreamFaults) validate() error {
	switch {
	case f.Delay < 0:
		return &FaultsError{Field: "Delay", Reason: fmt.Sprintf("is %v, want >= 0", f.Delay)}
	case f.MaxChunk < 0:
		return &FaultsError{Field: "MaxChunk", Reason: fmt.Sprintf("is %d, want >= 0", f.MaxChunk)}
	case f.CutAfter < 0:
		return &FaultsError{Field: "CutAfter", Reason: fmt.Sprintf("is %d, want >= 0", f.CutAfter)}
	}
	return nil
}
