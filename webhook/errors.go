package webhook

import (
	"errors"
	"fmt"
	"net/netip"
)

var (
	// ErrBadConfig wraps every ConfigError.
	ErrBadConfig = errors.New("webhook: bad config")
	// ErrBadSecret is returned by ParseSecret and ParsePublicKey for a
	// string that is not a secret or key in one of the accepted forms.
	ErrBadSecret = errors.New("webhook: bad secret")

	// ErrMissingHeaders: a request lacks webhook-id, webhook-timestamp or
	// webhook-signature. The Receiver answers 400.
	ErrMissingHeaders = errors.New("webhook: missing webhook-id, webhook-timestamp or webhook-signature header")
	// ErrMalformedHeaders: a header is present but unusable (a timestamp
	// that is not an integer number of seconds, a signature header
	// longer than MaxSignatureHeaderLen or with more than
	// MaxSignatureEntries entries, an id longer than MaxIDLen). The
	// Receiver answers 400.
	ErrMalformedHeaders = errors.New("webhook: malformed webhook header")
	// ErrTimestampTooOld: webhook-timestamp is further in the past than the
	// Verifier's tolerance. The Receiver answers 401.
	ErrTimestampTooOld = errors.New("webhook: timestamp too old")
	// ErrTimestampTooNew: webhook-timestamp is further in the future than
	// the Verifier's tolerance. The Receiver answers 401.
	ErrTimestampTooNew = errors.New("webhook: timestamp too new")
	// ErrNoMatchingSignature: no entry of webhook-signature matches any of
	// the Verifier's secrets or public keys. The Receiver answers 401.
	ErrNoMatchingSignature = errors.New("webhook: no matching signature")

	// ErrBlockedAddress wraps every BlockedAddressError.
	ErrBlockedAddress = errors.New("webhook: address not allowed")
	// ErrBadURL is returned by AddressPolicy.CheckURL for a URL that is
	// not an absolute http or https URL with a host (or not https when
	// HTTPSOnly is set).
	ErrBadURL = errors.New("webhook: bad endpoint URL")
)

// ConfigError is a Config field whose value is outside what it allows.
type ConfigError struct {
	Field string
	Value any
	Want  string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("webhook: bad config: %s %v: %s", e.Field, e.Value, e.Want)
}

func (e *ConfigError) Unwrap() error { return ErrBadConfig }

// Setting returns the field, its value and what it allows.
func (e *ConfigError) Setting() (string, any, string) { return e.Field, e.Value, e.Want }

func badConfig(field string, value any, want string) error {
	return &ConfigError{Field: field, Value: value, Want: want}
}

// BlockedAddressError is an address an AddressPolicy refuses to connect
// to. Addr is the address after DNS resolution (for a literal IP in a
// URL, that IP); Range names the blocked range it falls in
// ("loopback", "private", "IPv4-mapped IPv6 of 10.0.0.0/8 private", ...);
// Host is the URL host or dialed address when known.
type BlockedAddressError struct {
	Host  string
	Addr  netip.Addr
	Range string
}

func (e *BlockedAddressError) Error() string {
	if e.Host != "" && e.Host != e.Addr.String() {
		return fmt.Sprintf("webhook: address not allowed: %s (%s) is %s", e.Host, e.Addr, e.Range)
	}
	return fmt.Sprintf("webhook: address not allowed: %s is %s", e.Addr, e.Range)
}

func (e *BlockedAddressError) Unwrap() error { return ErrBlockedAddress }
