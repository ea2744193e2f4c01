package auth

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"unicode/utf8"
)

// maxPlainField bounds each field of a PLAIN message (RFC 4616 §2: at
// most 255 octets each).
const maxPlainField = 255

// PlainMessage is a decoded PLAIN message.
type PlainMessage struct {
	AuthzID, User, Password string
}

// ParsePlain decodes a PLAIN message (RFC 4616 §2):
// [authzid] NUL authcid NUL passwd, each UTF-8 without NUL, the last two
// non-empty, each at most 255 bytes.
func ParsePlain(msg []byte) (PlainMessage, error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return PlainMessage{}, fmt.Errorf("PLAIN message has %d NUL-separated fields, want 3", len(parts))
	}
	for i, p := range parts {
		if len(p) > maxPlainField {
			return PlainMessage{}, fmt.Errorf("PLAIN field %d longer than %d bytes", i+1, maxPlainField)
		}
		if !utf8.Valid(p) {
			return PlainMessage{}, fmt.Errorf("PLAIN field %d is not UTF-8", i+1)
		}
	}
	if len(parts[1]) == 0 || len(parts[2]) == 0 {
		return PlainMessage{}, fmt.Errorf("PLAIN message without user or password")
	}
	return PlainMessage{AuthzID: string(parts[0]), User: string(parts[1]), Password: string(parts[2])}, nil
}

// plainSession checks one PLAIN message.
type plainSession struct {
	a    *Authenticator
	done bool
	user *User
}

func (s *plainSession) step(in []byte) ([]byte, error) {
	if s.done {
		return nil, &AuthError{Mechanism: Plain, Err: ErrMalformed, Detail: "message after the exchange ended"}
	}
	s.done = true
	m, err := ParsePlain(in)
	if err != nil {
		return nil, &AuthError{Mechanism: Plain, Err: ErrMalformed, Detail: err.Error()}
	}
	fail := func(detail string) error {
		return &AuthError{Mechanism: Plain, User: m.User, Err: ErrBadCredentials, Detail: detail}
	}
	u, known := s.a.users.Lookup(m.User)
	mech, stored := plainCredential(u)
	if !stored {
		mech = ScramSHA256 // a decoy: the same work, and no password matches
	}
	c, _ := s.a.credential(m.User, mech)
	got, err := NewCredential(mech, m.Password, c.Salt, c.Iterations)
	match := err == nil && subtle.ConstantTimeCompare(got.StoredKey, c.StoredKey) == 1
	switch {
	case !known:
		return nil, fail("no such user")
	case !stored:
		return nil, fail("the user has no password (client certificate only)")
	case !match:
		return nil, fail("wrong password")
	case m.AuthzID != "" && m.AuthzID != m.User:
		return nil, fail(fmt.Sprintf("may not act as %q", m.AuthzID))
	}
	s.user = u
	return nil, nil
}

// plainCredential picks the stored credential PLAIN checks a password
// against: SCRAM-SHA-256's, else SCRAM-SHA-512's.
func plainCredential(u *User) (string, bool) {
	if u == nil {
		return "", false
	}
	for _, mech := range ScramMechanisms {
		if _, ok := u.SCRAM[mech]; ok {
			return mech, true
		}
	}
	return "", false
}
