package kafka

import (
	"errors"
	"fmt"
)

var (
	// ErrBadConfig is wrapped by every ConfigError.
	ErrBadConfig = errors.New("kafka transport: bad config")
	// ErrNotDelivered is returned by Ack for a position this subscriber
	// has not delivered, or a stream that is not one of its topic's
	// partitions: acknowledging it would commit what nobody processed.
	ErrNotDelivered = errors.New("kafka transport: acknowledged position not delivered")
	// ErrResetNotCommitted is wrapped by a GroupSubscriber's Close
	// error when the commit of a data loss's reset point was not
	// answered by Close's deadline (see GroupSubscriber.Close).
	ErrResetNotCommitted = errors.New("kafka transport: a data loss's reset point not committed")
)

// ConfigError is a Config field whose value is outside what it allows.
type ConfigError struct {
	Field string
	Value any
	Want  string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("kafka transport: bad config: %s %v: %s", e.Field, e.Value, e.Want)
}

func (e *ConfigError) Unwrap() error { return ErrBadConfig }

// Setting returns the field at fault, its value and what it allows.
func (e *ConfigError) Setting() (string, any, string) { return e.Field, e.Value, e.Want }
