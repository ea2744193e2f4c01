package transport

import (
	"errors"
	"fmt"
)

var (
	// ErrClosed is returned by operations on a closed publisher or
	// subscriber.
	ErrClosed = errors.New("transport: closed")
	// ErrUnknownScheme is returned by Open for a URL scheme no imported
	// transport registered.
	ErrUnknownScheme = errors.New("transport: unknown URL scheme")
	// ErrBadURL is returned when a transport URL cannot be used.
	ErrBadURL = errors.New("transport: bad URL")
	// ErrTooLarge is returned by Publish for a message larger than the
	// transport accepts.
	ErrTooLarge = errors.New("transport: message too large")
)

// URLError describes why a transport URL could not be opened.
type URLError struct {
	URL string
	Err error
}

func (e *URLError) Error() string { return fmt.Sprintf("transport: open %q: %v", e.URL, e.Err) }

func (e *URLError) Unwrap() error { return e.Err }
