package webhook

import (
	"crypto/ed25519"
	"crypto/hmac"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is how far webhook-timestamp may be from the
// Verifier's clock, in either direction, when Tolerance is zero (the
// specification's and the official libraries' five minutes).
const DefaultTolerance = 5 * time.Minute

// Bounds on what Verify reads from the headers; past them the request is
// refused with ErrMalformedHeaders.
const (
	// MaxIDLen bounds webhook-id, in bytes.
	MaxIDLen = 256
	// MaxSignatureHeaderLen bounds webhook-signature, in bytes.
	MaxSignatureHeaderLen = 4096
	// MaxSignatureEntries bounds the number of space-separated entries
	// of webhook-signature.
	MaxSignatureEntries = 32
)

// Verifier checks the Standard Webhooks headers of a request against a
// set of secrets. It accepts a request when any one entry of
// webhook-signature matches any one secret (so both the old and the new
// secret verify during a rotation), and ignores entries of versions it
// does not know. Signatures are compared in constant time. A Verifier is
// safe for concurrent use once its fields are set.
type Verifier struct {
	// Secrets verify "v1" entries (whsec_ secrets) and "v1a" entries
	// (whsk_ keys, through their public half).
	Secrets []Secret
	// PublicKeys verify "v1a" entries.
	PublicKeys []PublicKey
	// Tolerance is how far webhook-timestamp may be from Now, in either
	// direction. Zero means DefaultTolerance; it may not be negative.
	Tolerance time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// validate checks the Verifier's fields.
func (v *Verifier) validate() error {
	if v.Tolerance < 0 {
		return badConfig("Tolerance", v.Tolerance, "must be >= 0 (0 means 5m)")
	}
	n := len(v.PublicKeys)
	for _, s := range v.Secrets {
		if !s.IsZero() {
			n++
		}
	}
	if n == 0 {
		return badConfig("Secrets", len(v.Secrets), "at least one secret or public key")
	}
	return nil
}

// Verify checks the webhook-id, webhook-timestamp and webhook-signature
// headers of h against body. Several webhook-signature header lines (a
// proxy may split one) count as one, their entries joined. It returns
// nil, or an error wrapping
// ErrMissingHeaders, ErrMalformedHeaders, ErrTimestampTooOld,
// ErrTimestampTooNew, ErrNoMatchingSignature, or (for a Verifier with no
// secrets or a negative Tolerance) ErrBadConfig.
func (v *Verifier) Verify(h http.Header, body []byte) error {
	return v.VerifyValues(h.Get(HeaderID), h.Get(HeaderTimestamp), strings.Join(h.Values(HeaderSignature), " "), body)
}

// VerifyValues is Verify with the three header values given directly.
func (v *Verifier) VerifyValues(id, timestamp, signature string, body []byte) error {
	if err := v.validate(); err != nil {
		return err
	}
	if id == "" || timestamp == "" || signature == "" {
		return ErrMissingHeaders
	}
	if len(id) > MaxIDLen {
		return fmt.Errorf("%w: webhook-id is %d bytes, more than %d", ErrMalformedHeaders, len(id), MaxIDLen)
	}
	sec, err := parseTimestamp(timestamp)
	if err != nil {
		return err
	}
	sigs, err := parseSignatureHeader(signature)
	if err != nil {
		return err
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	tol := v.Tolerance
	if tol == 0 {
		tol = DefaultTolerance
	}
	// Times are compared, not a Duration between them: one saturates
	// ~292 years away, and negating the saturated minimum overflows.
	at, t := now(), time.Unix(sec, 0)
	if t.Before(at.Add(-tol)) {
		return fmt.Errorf("%w: %s is %s before now, tolerance %s", ErrTimestampTooOld, timestamp, at.Sub(t).Truncate(time.Second), tol)
	}
	if t.After(at.Add(tol)) {
		return fmt.Errorf("%w: %s is %s after now, tolerance %s", ErrTimestampTooNew, timestamp, t.Sub(at).Truncate(time.Second), tol)
	}
	if v.match(id, timestamp, body, sigs) {
		return nil
	}
	return ErrNoMatchingSignature
}

// match reports whether any entry of sigs verifies under any key.
func (v *Verifier) match(id, ts string, body []byte, sigs []signatureEntry) bool {
	var hasV1, hasV1a bool
	for _, e := range sigs {
		hasV1 = hasV1 || e.version == VersionHMAC
		hasV1a = hasV1a || e.version == VersionEd25519
	}
	if hasV1 {
		for _, s := range v.Secrets {
			if s.hmacKey == nil {
				continue
			}
			want := mac(s.hmacKey, id, ts, body)
			for _, e := range sigs {
				if e.version == VersionHMAC && hmac.Equal(e.sig, want) {
					return true
				}
			}
		}
	}
	if hasV1a {
		msg := content(id, ts, body)
		check := func(pub ed25519.PublicKey) bool {
			for _, e := range sigs {
				if e.version == VersionEd25519 && len(e.sig) == ed25519.SignatureSize && ed25519.Verify(pub, msg, e.sig) {
					return true
				}
			}
			return false
		}
		for _, k := range v.PublicKeys {
			if k.key != nil && check(k.key) {
				return true
			}
		}
		for _, s := range v.Secrets {
			if s.edKey != nil && check(s.edKey.Public().(ed25519.PublicKey)) {
				return true
			}
		}
	}
	return false
}

// parseTimestamp reads webhook-timestamp: decimal digits only, integer
// seconds since the Unix epoch.
func parseTimestamp(s string) (int64, error) {
	if len(s) > 18 {
		return 0, fmt.Errorf("%w: webhook-timestamp %.20q… is not integer seconds", ErrMalformedHeaders, s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: webhook-timestamp %q is not integer seconds", ErrMalformedHeaders, s)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: webhook-timestamp %q is not integer seconds", ErrMalformedHeaders, s)
	}
	return n, nil
}

// signatureEntry is one "version,base64" entry of webhook-signature
// whose base64 decoded.
type signatureEntry struct {
	version string
	sig     []byte
}

// parseSignatureHeader splits webhook-signature into its entries. Entries
// are separated by spaces (runs of white space are accepted); an entry
// with no comma, or whose signature is not standard padded base64, can
// never match and is skipped, as are versions other than v1 and v1a. Only
// a header over MaxSignatureHeaderLen or MaxSignatureEntries is an error.
func parseSignatureHeader(h string) ([]signatureEntry, error) {
	if len(h) > MaxSignatureHeaderLen {
		return nil, fmt.Errorf("%w: webhook-signature is %d bytes, more than %d", ErrMalformedHeaders, len(h), MaxSignatureHeaderLen)
	}
	fields := strings.Fields(h)
	if len(fields) > MaxSignatureEntries {
		return nil, fmt.Errorf("%w: webhook-signature has %d entries, more than %d", ErrMalformedHeaders, len(fields), MaxSignatureEntries)
	}
	var out []signatureEntry
	for _, f := range fields {
		version, sig, ok := strings.Cut(f, ",")
		if !ok || (version != VersionHMAC && version != VersionEd25519) {
			continue
		}
		b, err := std.DecodeString(sig)
		if err != nil {
			continue
		}
		out = append(out, signatureEntry{version: version, sig: b})
	}
	return out, nil
}
