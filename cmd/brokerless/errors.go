package main

import (
	"errors"
	"fmt"

	"github.com/brokerless/brokerless/logd"
	"github.com/brokerless/brokerless/logd/storage"
	"github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport/faultnet"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// errHelpShown is returned by a command that printed its help because
// --help was given: a success.
var errHelpShown = errors.New("help shown")

// usageError is a mistake in the command line; it exits with status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }

func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// configError turns a library's rejection of its configuration, which
// comes from flag values, into a usage error; other errors pass through.
func configError(err error) error {
	if errors.Is(err, multicast.ErrBadConfig) || errors.Is(err, reliable.ErrBadConfig) ||
		errors.Is(err, faultnet.ErrBadFaults) || errors.Is(err, logd.ErrBadConfig) || errors.Is(err, storage.ErrBadConfig) {
		return &usageError{err}
	}
	return err
}
