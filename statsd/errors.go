package statsd

import (
	"errors"
	"fmt"
)

var (
	// ErrBadConfig wraps every configuration validation error.
	ErrBadConfig = errors.New("statsd: bad config")
	// ErrBadClientID is wrapped by a ClientIDError.
	ErrBadClientID = errors.New("statsd: bad client id")
	// ErrBadLine wraps every LineError.
	ErrBadLine = errors.New("statsd: bad line")
	// ErrClosed is returned by a Server used after Close.
	ErrClosed = errors.New("statsd: server closed")
)

// ClientIDError says why a client id cannot be used in a sequence line.
type ClientIDError struct {
	ID     string
	Reason string
}

func (e *ClientIDError) Error() string {
	return fmt.Sprintf("statsd: bad client id %q: %s", e.ID, e.Reason)
}

func (e *ClientIDError) Unwrap() error { return ErrBadClientID }
