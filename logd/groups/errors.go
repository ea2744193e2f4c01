package groups

import "errors"

// ErrBadConfig wraps every configuration validation error.
var ErrBadConfig = errors.New("groups: bad config")
