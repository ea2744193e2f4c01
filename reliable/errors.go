package reliable

import (
	"errors"
	"fmt"
)

var (
	// ErrMalformed marks a datagram that claims to be ours but cannot be
	// decoded. Decode errors wrap it in a *DecodeError.
	ErrMalformed = errors.New("reliable: malformed datagram")
	// ErrForeign marks a datagram that is not brokerless traffic (wrong
	// magic) or is of a protocol version this code does not speak.
	ErrForeign = errors.New("reliable: foreign datagram")
	// ErrUnauthenticated marks a datagram refused for want of a valid
	// authentication tag when a key is configured.
	ErrUnauthenticated = errors.New("reliable: datagram not authenticated")
	// ErrBackpressure is returned by Sender.Publish when its bounded queue
	// of datagrams waiting for the network is full. Send what
	// NextOutgoing returns, then try again.
	ErrBackpressure = errors.New("reliable: send queue full")
	// ErrFlowControl is returned by Sender.Publish when flow control
	// holds the publisher back: the message would take its window past
	// a receiver it waits for, or fewer receivers than it needs are
	// known. A STATUS from the receivers, or their timeout, releases it.
	ErrFlowControl = errors.New("reliable: held by flow control")
	// ErrTooLarge is returned by Sender.Publish for a message over
	// SenderConfig.MaxMessageSize or with metadata that does not fit one
	// datagram.
	ErrTooLarge = errors.New("reliable: message too large")
	// ErrClosed is returned by Sender.Publish after Close.
	ErrClosed = errors.New("reliable: sender closed")
	// ErrBadConfig wraps every configuration validation error.
	ErrBadConfig = errors.New("reliable: bad config")
)

// DecodeError says what is wrong with a datagram.
type DecodeError struct {
	Kind   error // ErrMalformed or ErrForeign
	Reason string
}

func (e *DecodeError) Error() string { return fmt.Sprintf("%v: %s", e.Kind, e.Reason) }

func (e *DecodeError) Unwrap() error { return e.Kind }

// Decode errors are values made once, so rejecting a flood of bad
// datagrams does not allocate.
var (
	errNotOurs        = &DecodeError{ErrForeign, "no brokerless magic"}
	errVersion        = &DecodeError{ErrForeign, "unsupported protocol version"}
	errShort          = &DecodeError{ErrMalformed, "shorter than its header"}
	errType           = &DecodeError{ErrMalformed, "unknown packet type"}
	errZeroSession    = &DecodeError{ErrMalformed, "zero session"}
	errDataFlags      = &DecodeError{ErrMalformed, "unknown data flags"}
	errNoFrames       = &DecodeError{ErrMalformed, "data without frames"}
	errSeqZero        = &DecodeError{ErrMalformed, "sequence zero"}
	errSeqWrap        = &DecodeError{ErrMalformed, "sequence range wraps"}
	errFrameLen       = &DecodeError{ErrMalformed, "frame length past the datagram"}
	errFrameFlags     = &DecodeError{ErrMalformed, "bad frame flags"}
	errFrameMeta      = &DecodeError{ErrMalformed, "frame metadata past the frame"}
	errFrameTotal     = &DecodeError{ErrMalformed, "fragment total smaller than its chunk"}
	errTrailing       = &DecodeError{ErrMalformed, "bytes after the last frame"}
	errFrameCount     = &DecodeError{ErrMalformed, "fewer frames than the count says"}
	errRangeCount     = &DecodeError{ErrMalformed, "range count does not match length"}
	errRangeOrder     = &DecodeError{ErrMalformed, "ranges not ascending and disjoint"}
	errHeartbeatOrder = &DecodeError{ErrMalformed, "heartbeat low edge above next sequence"}
	errLowOrder       = &DecodeError{ErrMalformed, "window low edge above first sequence"}
	errZeroReceiver   = &DecodeError{ErrMalformed, "status from receiver 0"}
)

// ConfigError is a Config field whose value is outside what it allows.
// It wraps ErrBadConfig.
type ConfigError struct {
	Field string // the field, as SenderConfig or ReceiverConfig spells it
	Value any    // the value it was given
	Want  string // what it allows, e.g. "must be in [256, 65507]"
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("reliable: bad config: %s %v: %s", e.Field, e.Value, e.Want)
}

func (e *ConfigError) Unwrap() error { return ErrBadConfig }

// Setting returns the field, its value and what it allows.
func (e *ConfigError) Setting() (field string, value any, want string) {
	return e.Field, e.Value, e.Want
}

func badConfig(field string, value any, want string, args ...any) error {
	return &ConfigError{Field: field, Value: value, Want: fmt.Sprintf(want, args...)}
}

var errNotForUs = &DecodeError{ErrForeign, "packet for another stream or of the wrong type"}

// ErrOverBudget is returned by Sender.HandleControl for a NACK dropped
// because its source sent more than its budget allows.
var ErrOverBudget = errors.New("reliable: NACK over its source's budget")
