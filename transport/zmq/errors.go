package zmq

import (
	"errors"
	"fmt"
)

var (
	// ErrBadConfig wraps every configuration validation error.
	ErrBadConfig = errors.New("zmq: bad config")
	// ErrBadHeader wraps the errors of a header frame that cannot be
	// decoded.
	ErrBadHeader = errors.New("zmq: bad header frame")
	// ErrBadPack wraps the errors of a packed message body that cannot be
	// decoded.
	ErrBadPack = errors.New("zmq: bad packed message")
	// ErrFrameTooLarge is the error a connection fails with when its peer
	// sends a frame or message larger than Config.MaxMessageBytes, or a
	// message of more frames than the larger of 1024 and one per 64
	// bytes of MaxMessageBytes.
	ErrFrameTooLarge = errors.New("zmq: frame or message larger than allowed")
	// ErrFrameTimeout is the error a connection fails with when the
	// body of a frame over 64 KiB, or the rest of a message once over
	// 64 KiB, stalls: its next 64 KiB do not arrive within
	// Config.FrameTimeout (waiting for
	// room in Config.MaxPendingBytes included, time our reader spends
	// handing on what it read excluded).
	ErrFrameTimeout = errors.New("zmq: a large frame's body did not arrive in time")
	// ErrBadFrame is the error a connection fails with when its peer
	// breaks the ZMTP framing (a command where none may be).
	ErrBadFrame = errors.New("zmq: bad ZMTP framing")
	// ErrVersion is the error a handshake fails with when the peer's
	// greeting says it speaks ZMTP 1.0 or 2.0 (libzmq before 4.0).
	ErrVersion = errors.New("zmq: peer does not speak ZMTP 3")
)

// ConfigError is a Config field whose value is outside what it allows.
// It wraps ErrBadConfig.
type ConfigError struct {
	Field string // the field, as Config spells it, e.g. "SubscriberQueue"
	Value any    // the value it was given
	Want  string // what it allows, e.g. "must be > 0"
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("zmq: bad config: %s %v: %s", e.Field, e.Value, e.Want)
}

func (e *ConfigError) Unwrap() error { return ErrBadConfig }

// Setting returns the field, its value and what it allows.
func (e *ConfigError) Setting() (field string, value any, want string) {
	return e.Field, e.Value, e.Want
}

func badConfig(field string, value any, want string) error {
	return &ConfigError{Field: field, Value: value, Want: want}
}
