package auth

import (
	"encoding/base64"
	"fmt"

	"github.com/xdg-go/scram"
)

// scramSession is one SCRAM exchange, run by xdg-go/scram's server
// conversation over the stored credentials: client-first → server-first
// (nonce, salt, iterations), client-final (proof) → server-final
// (server signature).
type scramSession struct {
	a         *Authenticator
	mechanism string
	conv      *scram.ServerConversation
	name      string // the user name the client gave
	real      bool   // whether name has a stored credential
	steps     int
	user      *User
}

// nonceBytes is the random part of the server's nonce (xdg-go's default
// length).
const nonceBytes = 24

// randomNonce is the server's part of a SCRAM nonce: base64 (which has
// no ',') of nonceBytes from Rand.
func (a *Authenticator) randomNonce() (string, error) {
	raw := make([]byte, nonceBytes)
	if err := a.read(raw); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(raw), nil
}

func (a *Authenticator) startScram(mechanism string) (*scramSession, error) {
	nonce, err := a.nonce()
	if err != nil {
		return nil, err
	}
	s := &scramSession{a: a, mechanism: mechanism}
	srv, err := hashOf(mechanism).NewServer(func(name string) (scram.StoredCredentials, error) {
		c, real := a.credential(name, mechanism)
		s.name, s.real = name, real
		return scram.StoredCredentials{
			KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: c.Iterations},
			StoredKey:  c.StoredKey,
			ServerKey:  c.ServerKey,
		}, nil
	})
	if err != nil {
		return nil, err
	}
	s.conv = srv.WithNonceGenerator(func() string { return nonce }).NewConversation()
	return s, nil
}

func (s *scramSession) step(in []byte) ([]byte, bool, error) {
	s.steps++
	if s.steps > 2 || s.conv.Done() {
		return nil, true, s.fail(ErrMalformed, "message after the exchange ended")
	}
	out, err := s.conv.Step(string(in))
	if err != nil {
		if out == scram.ErrInvalidProof {
			if !s.real {
				return nil, true, s.fail(ErrBadCredentials, "no such user, or no "+s.mechanism+" credential")
			}
			return nil, true, s.fail(ErrBadCredentials, "wrong password")
		}
		return nil, true, s.fail(ErrMalformed, err.Error())
	}
	if !s.conv.Done() {
		return []byte(out), false, nil
	}
	u, ok := s.a.users.Lookup(s.name)
	switch {
	case !s.conv.Valid() || !s.real || !ok: // a decoy cannot pass the proof; never trust it
		return nil, true, s.fail(ErrBadCredentials, "proof not verified")
	case s.conv.AuthzID() != "" && s.conv.AuthzID() != s.name:
		return nil, true, s.fail(ErrBadCredentials, fmt.Sprintf("may not act as %q", s.conv.AuthzID()))
	}
	s.user = u
	return []byte(out), true, nil
}

func (s *scramSession) fail(kind error, detail string) error {
	return &AuthError{Mechanism: s.mechanism, User: s.name, Err: kind, Detail: detail}
}
