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

// oneLineError is a mistake on the command line that one line explains
// fully, such as a bad transport URL: it is reported without the hint to
// run --help, and exits with status 2.
type oneLineError struct{ err error }

func (e *oneLineError) Error() string { return e.err.Error() }

func (e *oneLineError) Unwrap() error { return e.err }

// settingError is what the libraries' typed configuration errors
// (multicast.ConfigError, logd.ConfigError, …) have in common: the Config
// field at fault, the value it was given and what it allows.
type settingError interface {
	error
	Setting() (field string, value any, want string)
}

// configError turns a library's rejection of its configuration, which
// comes from flag values, into a usage error (exit 2) that names the flag
// rather than the Go field: flagOf maps Config field names (as the
// library's ConfigError spells them, e.g. "Storage.FsyncInterval") to
// flag names without dashes. Other errors pass through.
func configError(err error, flagOf map[string]string) error {
	var se settingError
	if errors.As(err, &se) {
		field, value, want := se.Setting()
		if flag, ok := flagOf[field]; ok {
			return usagef("--%s %v: %s", flag, value, want)
		}
		return &usageError{err}
	}
	if errors.Is(err, multicast.ErrBadConfig) || errors.Is(err, reliable.ErrBadConfig) ||
		errors.Is(err, faultnet.ErrBadFaults) || errors.Is(err, logd.ErrBadConfig) || errors.Is(err, storage.ErrBadConfig) {
		return &usageError{err}
	}
	return err
}
