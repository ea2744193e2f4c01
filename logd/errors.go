package logd

import (
	"errors"
	"fmt"
)

var (
	// ErrBadConfig wraps every configuration validation error.
	ErrBadConfig = errors.New("logd: bad config")
	// ErrClosed is returned by Serve after Close.
	ErrClosed = errors.New("logd: server closed")
	// ErrInvalidConfig marks a topic config logd cannot honour.
	ErrInvalidConfig = errors.New("logd: invalid topic config")
)

// ConfigError is a Config field whose value is outside what it allows.
type ConfigError struct {
	Field string
	Value any
	Want  string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("logd: bad config: %s %v: %s", e.Field, e.Value, e.Want)
}

func (e *ConfigError) Unwrap() error { return ErrBadConfig }

// Setting returns the field at fault, its value and what it allows.
func (e *ConfigError) Setting() (string, any, string) { return e.Field, e.Value, e.Want }
