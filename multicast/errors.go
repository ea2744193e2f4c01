package multicast

import (
	"errors"
	"fmt"

	"github.com/brokerless/brokerless/reliable"
)

// ErrBadConfig wraps every configuration validation error.
var ErrBadConfig = errors.New("multicast: bad config")

// ConfigError is a Config field whose value is outside what it allows.
// It wraps ErrBadConfig. Fields of the recovery engine are named
// Sender.X and Receiver.X.
type ConfigError struct {
	Field string // the field, as Config spells it, e.g. "Sender.MTU"
	Value any    // the value it was given
	Want  string // what it allows, e.g. "must be in [0, 255]"
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("multicast: bad config: %s %v: %s", e.Field, e.Value, e.Want)
}

func (e *ConfigError) Unwrap() error { return ErrBadConfig }

// Setting returns the field, its value and what it allows.
func (e *ConfigError) Setting() (field string, value any, want string) {
	return e.Field, e.Value, e.Want
}

func badConfig(field string, value any, want string, args ...any) error {
	return &ConfigError{Field: field, Value: value, Want: fmt.Sprintf(want, args...)}
}

// engineConfigError renames a reliable.ConfigError to the Config field
// it came from (Sender.X or Receiver.X); other errors pass through.
func engineConfigError(err error, prefix string) error {
	var ce *reliable.ConfigError
	if errors.As(err, &ce) {
		return &ConfigError{Field: prefix + ce.Field, Value: ce.Value, Want: ce.Want}
	}
	return err
}

// ErrArchiveTimeout is wrapped by the error a subscriber's archive
// reader reports when the log did not answer within ArchiveConfig.Wait:
// finding where a replay starts took longer, or its reads returned
// nothing though the log holds records past where it reads (or its
// bounds could not be had either). The archive hangs, rather than
// holding nothing more; the replay ends as for a read that failed: the
// engine's reason stands, the failure is counted (ArchiveStats.Errors),
// and a warning says why.
var ErrArchiveTimeout = errors.New("multicast: archive read timed out")

// ErrUnsent is wrapped by the *UnsentError Publisher.Close returns.
var ErrUnsent = errors.New("multicast: published messages not sent")

// UnsentError is returned by Publisher.Close when messages Publish
// accepted could not be sent within CloseLinger: flow control held them
// (a receiver did not make room). They are never sent; the END names
// them, so subscribers report them as a Gap. It wraps ErrUnsent.
type UnsentError struct {
	From, To uint64 // their sequence numbers
	Messages int    // how many messages they are
}

func (e *UnsentError) Error() string {
	return fmt.Sprintf("multicast: %d published messages (sequence %d..%d) not sent before Close's linger ran out", e.Messages, e.From, e.To)
}

func (e *UnsentError) Unwrap() error { return ErrUnsent }
