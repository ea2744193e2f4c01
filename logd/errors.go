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

// setting is a typed configuration error of another package, such as
// storage.ConfigError.
type setting interface {
	error
	Setting() (field string, value any, want string)
}

// nestedConfigError is a configuration error of a package whose Config
// logd.Config holds (storage.Config as Storage): it names the field as
// logd.Config reaches it, e.g. "Storage.FsyncInterval".
type nestedConfigError struct {
	prefix string
	err    setting
}

func (e *nestedConfigError) Error() string { return e.err.Error() }
func (e *nestedConfigError) Unwrap() error { return e.err }

// Setting returns the field at fault (prefixed), its value and what it
// allows.
func (e *nestedConfigError) Setting() (string, any, string) {
	field, value, want := e.err.Setting()
	return e.prefix + field, value, want
}

// nestConfigError prefixes the field of a typed configuration error in
// err, if there is one.
func nestConfigError(prefix string, err error) error {
	var se setting
	if errors.As(err, &se) {
		return &nestedConfigError{prefix: prefix, err: se}
	}
	return err
}
