package auth

import (
	"errors"
	"fmt"
)

var (
	// ErrBadConfig wraps every Config validation error.
	ErrBadConfig = errors.New("auth: bad config")
	// ErrBadUsersFile wraps every reason a users file is refused.
	ErrBadUsersFile = errors.New("auth: bad users file")
	// ErrBadGrant is a grant that does not parse.
	ErrBadGrant = errors.New("auth: bad grant")
	// ErrUnsupportedMechanism is a SASL mechanism the server does not
	// offer.
	ErrUnsupportedMechanism = errors.New("auth: unsupported SASL mechanism")
	// ErrAuthFailed wraps every failed authentication.
	ErrAuthFailed = errors.New("auth: authentication failed")
	// ErrBadCredentials: the user does not exist, the password or
	// proof is wrong, or the authorization identity is not the user.
	ErrBadCredentials = errors.New("invalid credentials")
	// ErrMalformed: a SASL message that does not parse, or a step after
	// the conversation ended.
	ErrMalformed = errors.New("malformed SASL message")
)

// ConfigError is a Config field whose value is outside what it allows.
type ConfigError struct {
	Field string
	Value any
	Want  string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("auth: bad config: %s %v: %s", e.Field, e.Value, e.Want)
}

func (e *ConfigError) Unwrap() error { return ErrBadConfig }

// Setting names the field, its value and what it allows.
func (e *ConfigError) Setting() (string, any, string) { return e.Field, e.Value, e.Want }

// FileError says why a users file was refused: which user (when the
// fault is inside one) and what is wrong.
type FileError struct {
	Path   string // empty when decoding bytes
	User   string
	Reason string
}

func (e *FileError) Error() string {
	s := "auth: users file"
	if e.Path != "" {
		s += " " + e.Path
	}
	if e.User != "" {
		s += fmt.Sprintf(": user %q", e.User)
	}
	return s + ": " + e.Reason
}

func (e *FileError) Unwrap() error { return ErrBadUsersFile }

// AuthError is a failed authentication: the mechanism, the user name
// the client gave (possibly one that does not exist) and why. Its
// Error text is for logs; a client should be told only that its
// credentials were refused.
type AuthError struct {
	Mechanism string
	User      string
	Err       error // ErrBadCredentials or ErrMalformed
	Detail    string
}

func (e *AuthError) Error() string {
	s := fmt.Sprintf("auth: %s authentication", e.Mechanism)
	if e.User != "" {
		s += fmt.Sprintf(" of user %q", e.User)
	}
	s += " failed: " + e.Err.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *AuthError) Unwrap() []error { return []error{ErrAuthFailed, e.Err} }
