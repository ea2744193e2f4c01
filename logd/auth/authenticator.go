package auth

import (
	"crypto/rand"
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
	// Rand supplies SCRAM nonces, and the decoy secret when
	// DecoySecret is nil and no user has a SCRAM credential. Default
	// crypto/rand.Reader; tests inject a seeded one.
	Rand io.Reader
	// DecoySecret keys the decoy credentials of users who do not exist
	// (see the package doc): at least MinDecoySecretBytes, kept secret,
	// and the same on every start, so that a decoy's salt is as stable
	// across restarts as a real user's. logd keeps one in its data
	// directory. Default: derived from the users' stored keys, which
	// are as secret as the users file and as stable as its users (a
	// change of the users changes every decoy, though, while real
	// salts stay: give a kept secret); when no user has a SCRAM
	// credential, read from Rand, new each time New is called.
	DecoySecret []byte
}

// MinDecoySecretBytes is the least length of Config.DecoySecret.
const MinDecoySecretBytes = 32

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
	if c.DecoySecret != nil && len(c.DecoySecret) < MinDecoySecretBytes {
		// The secret itself is never put in an error.
		return &ConfigError{"DecoySecret", fmt.Sprintf("of %d bytes", len(c.DecoySecret)), fmt.Sprintf("at least %d bytes", MinDecoySecretBytes)}
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
	// decoys are, per SCRAM mechanism, the iteration counts and salt
	// lengths of the users' credentials, by user name: an unknown
	// user's decoy copies one of them, chosen by its name.
	decoys map[string][]decoyShape
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
	a := &Authenticator{users: cfg.Users, mechs: slices.Clone(cfg.Mechanisms), rand: cfg.Rand, secret: slices.Clone(cfg.DecoySecret), decoys: decoyShapes(cfg.Users)}
	if a.secret == nil {
		a.secret = usersSecret(cfg.Users)
	}
	if a.secret == nil {
		a.secret = make([]byte, MinDecoySecretBytes)
		if err := a.read(a.secret); err != nil {
			return nil, err
		}
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
