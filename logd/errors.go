package logd

import "errors"

var (
	// ErrBadConfig wraps every configuration validation error.
	ErrBadConfig = errors.New("logd: bad config")
	// ErrClosed is returned by Serve after Close.
	ErrClosed = errors.New("logd: server closed")
	// ErrInvalidConfig marks a topic config logd cannot honour.
	ErrInvalidConfig = errors.New("logd: invalid topic config")
)
