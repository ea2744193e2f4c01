package multicast

import "errors"

var (
	// ErrBadConfig wraps every configuration validation error.
	ErrBadConfig = errors.New("multicast: bad config")
	// ErrNoInterfaceAddr is returned when the chosen interface has no
	// IPv4 address to send from.
	ErrNoInterfaceAddr = errors.New("multicast: interface has no IPv4 address")
)
