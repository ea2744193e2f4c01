package pipe

import (
	"errors"
	"fmt"
)

var (
	// ErrBadConfig is wrapped by every ConfigError.
	ErrBadConfig = errors.New("pipe: bad config")
	// ErrSplitStream is returned by Core.Resume when the destination
	// holds one source stream in more than one of its streams (two
	// partitions of a topic): its last records then do not say what was
	// written before them, so the pipe cannot resume exactly.
	ErrSplitStream = errors.New("pipe: a source stream is split over several destination streams")
	// ErrBadTicket is returned by Core.Done for a ticket that is not in
	// flight.
	ErrBadTicket = errors.New("pipe: ticket not in flight")
)

// ConfigError is a Config field whose value is outside what it allows.
type ConfigError struct {
	Field string
	Value any
	Want  string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("pipe: bad config: %s %v: %s", e.Field, e.Value, e.Want)
}

func (e *ConfigError) Unwrap() error { return ErrBadConfig }

// Setting returns the field, its value and what it allows.
func (e *ConfigError) Setting() (string, any, string) { return e.Field, e.Value, e.Want }
