package faultnet

import (
	"errors"
	"fmt"
)

var (
	// ErrBadFaults is wrapped by every error about an unusable Faults,
	// StreamFaults or Config.
	ErrBadFaults = errors.New("faultnet: bad faults")
	// ErrCut is wrapped by the errors a [Conn] returns once StreamFaults.
	// CutAfter bytes have passed and the connection was dropped.
	ErrCut = errors.New("faultnet: connection cut")
)

// FaultsError says which setting is unusable and why. It wraps
// [ErrBadFaults].
type FaultsError struct {
	Field  string // for example "Loss" or "Write.Jitter"
	Reason string
}

func (e *FaultsError) Error() string {
	return fmt.Sprintf("%v: %s %s", ErrBadFaults, e.Field, e.Reason)
}

func (e *FaultsError) Unwrap() error { return ErrBadFaults }
