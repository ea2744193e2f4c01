package webhook

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Prefixes of the string forms of secrets and keys, as Standard Webhooks
// defines them.
const (
	// SymmetricPrefix starts a symmetric (HMAC-SHA256, "v1") secret.
	SymmetricPrefix = "whsec_"
	// PrivateKeyPrefix starts an ed25519 private key ("v1a").
	PrivateKeyPrefix = "whsk_"
	// PublicKeyPrefix starts an ed25519 public key ("v1a").
	PublicKeyPrefix = "whpk_"
)

// Bounds of a symmetric secret's length in bytes (Standard Webhooks:
// 24 to 64 random bytes). NewSecret makes SecretLen bytes, as Svix does.
const (
	MinSecretLen = 24
	MaxSecretLen = 64
	SecretLen    = 32
)

// Secret signs messages: either a symmetric key (HMAC-SHA256, signature
// version "v1", string form whsec_…) or an ed25519 private key
// (signature version "v1a", string form whsk_…). The zero Secret is
// invalid: Sign panics on it; make one with ParseSecret, NewSecret or
// NewAsymmetricSecret.
type Secret struct {
	hmacKey []byte
	edKey   ed25519.PrivateKey
}

// PublicKey verifies "v1a" signatures made with the matching ed25519
// private key. String form whpk_ followed by the standard padded base64
// of the 32-byte key.
type PublicKey struct {
	key ed25519.PublicKey
}

var std = base64.StdEncoding.Strict()

// ParseSecret reads a secret's string form:
//   - "whsec_" followed by the standard padded base64 of 24 to 64 bytes
//     (HMAC-SHA256, signatures "v1,…"), or that base64 alone, without
//     the prefix, as the official libraries accept it;
//   - "whsk_" followed by the standard padded base64 of an ed25519
//     private key: its 32-byte seed, or the 64-byte seed‖public key
//     (signatures "v1a,…").
//
// Surrounding white space is ignored. Any other form is an error wrapping
// ErrBadSecret; its message never contains the secret.
func ParseSecret(s string) (Secret, error) {
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, SymmetricPrefix):
		key, err := std.DecodeString(s[len(SymmetricPrefix):])
		if err != nil {
			return Secret{}, fmt.Errorf("%w: %s… is not standard padded base64", ErrBadSecret, SymmetricPrefix)
		}
		if len(key) < MinSecretLen || len(key) > MaxSecretLen {
			return Secret{}, fmt.Errorf("%w: %s… holds %d bytes, want %d to %d", ErrBadSecret, SymmetricPrefix, len(key), MinSecretLen, MaxSecretLen)
		}
		return Secret{hmacKey: key}, nil
	case strings.HasPrefix(s, PrivateKeyPrefix):
		key, err := std.DecodeString(s[len(PrivateKeyPrefix):])
		if err != nil {
			return Secret{}, fmt.Errorf("%w: %s… is not standard padded base64", ErrBadSecret, PrivateKeyPrefix)
		}
		switch len(key) {
		case ed25519.SeedSize:
			return Secret{edKey: ed25519.NewKeyFromSeed(key)}, nil
		case ed25519.PrivateKeySize:
			priv := ed25519.NewKeyFromSeed(key[:ed25519.SeedSize])
			if !hmac.Equal(priv[ed25519.SeedSize:], key[ed25519.SeedSize:]) {
				return Secret{}, fmt.Errorf("%w: %s… public half does not match its seed", ErrBadSecret, PrivateKeyPrefix)
			}
			return Secret{edKey: priv}, nil
		default:
			return Secret{}, fmt.Errorf("%w: %s… holds %d bytes, want %d or %d", ErrBadSecret, PrivateKeyPrefix, len(key), ed25519.SeedSize, ed25519.PrivateKeySize)
		}
	case strings.HasPrefix(s, PublicKeyPrefix):
		return Secret{}, fmt.Errorf("%w: %s… is a public key: it verifies, it cannot sign (use ParsePublicKey)", ErrBadSecret, PublicKeyPrefix)
	default:
		// The official libraries strip a whsec_ prefix when there is one
		// and decode the rest: the bare base64 is a symmetric secret too.
		if key, err := std.DecodeString(s); err == nil && len(key) >= MinSecretLen && len(key) <= MaxSecretLen {
			return Secret{hmacKey: key}, nil
		}
		return Secret{}, fmt.Errorf("%w: want %s… or %s…", ErrBadSecret, SymmetricPrefix, PrivateKeyPrefix)
	}
}

// ParsePublicKey reads "whpk_" followed by the standard padded base64 of
// a 32-byte ed25519 public key.
func ParsePublicKey(s string) (PublicKey, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, PublicKeyPrefix) {
		return PublicKey{}, fmt.Errorf("%w: want %s…", ErrBadSecret, PublicKeyPrefix)
	}
	key, err := std.DecodeString(s[len(PublicKeyPrefix):])
	if err != nil {
		return PublicKey{}, fmt.Errorf("%w: %s… is not standard padded base64", ErrBadSecret, PublicKeyPrefix)
	}
	if len(key) != ed25519.PublicKeySize {
		return PublicKey{}, fmt.Errorf("%w: %s… holds %d bytes, want %d", ErrBadSecret, PublicKeyPrefix, len(key), ed25519.PublicKeySize)
	}
	return PublicKey{key: ed25519.PublicKey(key)}, nil
}

// NewSecret makes a symmetric secret of SecretLen bytes read from r
// (crypto/rand.Reader in production).
func NewSecret(r io.Reader) (Secret, error) {
	key := make([]byte, SecretLen)
	if _, err := io.ReadFull(r, key); err != nil {
		return Secret{}, fmt.Errorf("webhook: new secret: %w", err)
	}
	return Secret{hmacKey: key}, nil
}

// NewAsymmetricSecret makes an ed25519 key pair from r (crypto/rand.Reader
// in production): the Secret signs "v1a" entries, the PublicKey is what
// receivers verify with.
func NewAsymmetricSecret(r io.Reader) (Secret, PublicKey, error) {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := io.ReadFull(r, seed); err != nil {
		return Secret{}, PublicKey{}, fmt.Errorf("webhook: new asymmetric secret: %w", err)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	return Secret{edKey: priv}, PublicKey{key: priv.Public().(ed25519.PublicKey)}, nil
}

// String is the secret's string form, which ParseSecret reads back:
// whsec_… for a symmetric secret, whsk_… (the 32-byte seed) for an
// ed25519 key, "" for the zero Secret. It is the secret itself: do not
// log it.
func (s Secret) String() string {
	switch {
	case s.hmacKey != nil:
		return SymmetricPrefix + std.EncodeToString(s.hmacKey)
	case s.edKey != nil:
		return PrivateKeyPrefix + std.EncodeToString(s.edKey.Seed())
	default:
		return ""
	}
}

// LogValue keeps a Secret out of logs: log/slog records it as its kind
// ("whsec_…" or "whsk_…"), never its value.
func (s Secret) LogValue() slog.Value {
	switch {
	case s.hmacKey != nil:
		return slog.StringValue(SymmetricPrefix + "…")
	case s.edKey != nil:
		return slog.StringValue(PrivateKeyPrefix + "…")
	default:
		return slog.StringValue("")
	}
}

// IsZero reports whether s is the zero Secret.
func (s Secret) IsZero() bool { return s.hmacKey == nil && s.edKey == nil }

// Asymmetric reports whether s is an ed25519 key (signing "v1a").
func (s Secret) Asymmetric() bool { return s.edKey != nil }

// PublicKey returns the public key of an ed25519 Secret; ok is false for
// a symmetric one.
func (s Secret) PublicKey() (pk PublicKey, ok bool) {
	if s.edKey == nil {
		return PublicKey{}, false
	}
	return PublicKey{key: s.edKey.Public().(ed25519.PublicKey)}, true
}

// String is the key's string form, whpk_…, which ParsePublicKey reads
// back; "" for the zero PublicKey.
func (k PublicKey) String() string {
	if k.key == nil {
		return ""
	}
	return PublicKeyPrefix + std.EncodeToString(k.key)
}

// IsZero reports whether k is the zero PublicKey.
func (k PublicKey) IsZero() bool { return k.key == nil }

// mac is HMAC-SHA256 of the signed content under a symmetric key.
func mac(key []byte, id, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	writeContent(m, id, ts, body)
	return m.Sum(nil)
}

// writeContent writes Standard Webhooks' signed content, id.timestamp.body.
func writeContent(w io.Writer, id, ts string, body []byte) {
	io.WriteString(w, id)
	io.WriteString(w, ".")
	io.WriteString(w, ts)
	io.WriteString(w, ".")
	w.Write(body)
}

// content is the signed content as one slice (for ed25519).
func content(id, ts string, body []byte) []byte {
	b := make([]byte, 0, len(id)+len(ts)+2+len(body))
	b = append(b, id...)
	b = append(b, '.')
	b = append(b, ts...)
	b = append(b, '.')
	return append(b, body...)
}
