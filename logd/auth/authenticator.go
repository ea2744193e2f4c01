package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"slices"
	"sync"
)

// Config configures an Authenticator.
type Config struct {
	// Users is who may authenticate and what each may do. Required.
	Users *Users
	// Mechanisms are the SASL mechanisms offered, from Mechanisms.
	// Default: all of them.
	Mechanisms []string
	// Rand supplies SCRAM nonces and the secret behind unknown users'
	// decoy credentials. Default crypto/rand.Reader; tests inject a
	// seeded one.
	Rand io.Reader
}

func (c *Config) setDefaults() {
	if c.Mechanisms == nil {
		c.Mechanisms = slices.Clone(Mechanisms)
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
}

func (c *Config) validate() error {
	if c.Users == nil {
		return &ConfigError{"Users", nil, "required"}
	}
	if len(c.Mechanisms) == 0 {
		return &ConfigError{"Mechanisms", c.Mechanisms, "at least one of " + fmt.Sprint(Mechanisms)}
	}
	for i, m := range c.Mechanisms {
		if !slices.Contains(Mechanisms, m) {
			return &ConfigError{"Mechanisms", m, "one of " + fmt.Sprint(Mechanisms)}
		}
		if slices.Contains(c.Mechanisms[:i], m) {
			return &ConfigError{"Mechanisms", m, "listed once"}
		}
	}
	return nil
}

// Authenticator checks SASL exchanges against a set of users. It is
// safe for concurrent use; each exchange is a Session.
type Authenticator struct {
	users  *Users
	mechs  []string
	secret []byte // keys the decoy credentials of unknown users
	nonce  func() (string, error)

	mu   sync.Mutex // guards rand
	rand io.Reader
}

// New validates cfg and returns an Authenticator.
func New(cfg Config) (*Authenticator, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a := &Authenticator{users: cfg.Users, mechs: slices.Clone(cfg.Mechanisms), rand: cfg.Rand, secret: make([]byte, 32)}
	if err := a.read(a.secret); err != nil {
		return nil, err
	}
	a.nonce = a.randomNonce
	return a, nil
}

func (a *Authenticator) read(b []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := io.ReadFull(a.rand, b); err != nil {
		return fmt.Errorf("auth: reading randomness: %w", err)
	}
	return nil
}

// Mechanisms returns the mechanisms offered, for SaslHandshake.
func (a *Authenticator) Mechanisms() []string { return slices.Clone(a.mechs) }

// Lookup finds a user by name (e.g. a TLS client certificate's common
// name).
func (a *Authenticator) Lookup(name string) (*User, bool) { return a.users.Lookup(name) }

// maxMessage bounds one SASL message from a client: a SCRAM message
// with a 255-byte name and a 64-byte proof, or a PLAIN one, is far
// smaller.
const maxMessage = 4096

// Session is one SASL exchange.
type Session struct {
	mechanism string
	plain     *plainSession
	scram     *scramSession
}

// Start begins an exchange with mechanism, which must be offered.
func (a *Authenticator) Start(mechanism string) (*Session, error) {
	if !slices.Contains(a.mechs, mechanism) {
		return nil, fmt.Errorf("%w %q (offered: %v)", ErrUnsupportedMechanism, mechanism, a.mechs)
	}
	s := &Session{mechanism: mechanism}
	if mechanism == Plain {
		s.plain = &plainSession{a: a}
		return s, nil
	}
	sc, err := a.startScram(mechanism)
	if err != nil {
		return nil, err
	}
	s.scram = sc
	return s, nil
}

// Mechanism is the exchange's mechanism.
func (s *Session) Mechanism() string { return s.mechanism }

// Step takes the client's next message and returns the server's answer
// and whether the exchange is over. An error ends the exchange: an
// *AuthError wrapping ErrAuthFailed and either ErrBadCredentials or
// ErrMalformed. When the exchange is over without error, User is the
// authenticated user.
func (s *Session) Step(in []byte) (out []byte, done bool, err error) {
	if len(in) > maxMessage {
		return nil, true, &AuthError{Mechanism: s.mechanism, Err: ErrMalformed, Detail: fmt.Sprintf("message of %d bytes, more than %d", len(in), maxMessage)}
	}
	if s.plain != nil {
		out, err = s.plain.step(in)
		return out, true, err
	}
	return s.scram.step(in)
}

// User is the authenticated user once Step said done without error;
// nil before.
func (s *Session) User() *User {
	if s.plain != nil {
		return s.plain.user
	}
	return s.scram.user
}

// credential returns name's stored credential for mechanism, or, when
// the user does not exist or has none, a decoy: a salt and keys derived
// from the Authenticator's secret, the same on every attempt, that no
// password matches. real says which.
func (a *Authenticator) credential(name, mechanism string) (c Credential, real bool) {
	if u, ok := a.users.Lookup(name); ok {
		if c, ok := u.SCRAM[mechanism]; ok {
			return c, true
		}
	}
	derive := func(label string, n int) []byte {
		m := hmac.New(sha256.New, a.secret)
		fmt.Fprintf(m, "%s\x00%s\x00%s", label, mechanism, name)
		out := m.Sum(nil)
		for len(out) < n {
			m.Write(out)
			out = m.Sum(out)
		}
		return out[:n]
	}
	size := hashOf(mechanism)().Size()
	return Credential{
		Salt:       derive("salt", DefaultSaltBytes),
		Iterations: DefaultIterations,
		StoredKey:  derive("stored", size),
		ServerKey:  derive("server", size),
	}, false
}
