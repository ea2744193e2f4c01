package auth

import (
	"fmt"
	"io"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/xdg-go/scram"
)

// Mechanism names, as SaslHandshake spells them.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// Mechanisms lists every mechanism the package implements.
var Mechanisms = []string{ScramSHA256, ScramSHA512, Plain}

// ScramMechanisms lists the mechanisms a Credential can be stored for.
var ScramMechanisms = []string{ScramSHA256, ScramSHA512}

// Bounds of stored credentials. The iteration range is Kafka's.
const (
	MinIterations     = 4096
	MaxIterations     = 16384
	DefaultIterations = 8192
	minSalt, maxSalt  = 8, 128
	// DefaultSaltBytes is the salt length GenerateCredential uses.
	DefaultSaltBytes = 32
	maxName          = 255
)

// Credential is what the server keeps to verify one SCRAM mechanism
// (RFC 5802 §3): never the password.
type Credential struct {
	Salt       []byte
	Iterations int
	StoredKey  []byte // H(ClientKey), ClientKey = HMAC(SaltedPassword, "Client Key")
	ServerKey  []byte // HMAC(SaltedPassword, "Server Key")
}

// User is one entry of the users file.
type User struct {
	Name string
	// SCRAM holds a Credential per SCRAM mechanism the user may use;
	// empty for a user who authenticates only by TLS client certificate.
	SCRAM  map[string]Credential
	Grants []Grant
}

// Users is the content of a users file, by name.
type Users struct {
	byName map[string]*User
}

// NewUsers returns an empty set of users.
func NewUsers() *Users { return &Users{byName: map[string]*User{}} }

// Lookup finds a user by name.
func (us *Users) Lookup(name string) (*User, bool) {
	u, ok := us.byName[name]
	return u, ok
}

// Put adds u, or replaces the user of the same name, after checking it
// as the file decoder does.
func (us *Users) Put(u *User) error {
	if err := u.check(); err != nil {
		return err
	}
	us.byName[u.Name] = u
	return nil
}

// Remove deletes a user; it reports whether there was one.
func (us *Users) Remove(name string) bool {
	_, ok := us.byName[name]
	delete(us.byName, name)
	return ok
}

// List returns the users sorted by name.
func (us *Users) List() []*User {
	list := make([]*User, 0, len(us.byName))
	for _, u := range us.byName {
		list = append(list, u)
	}
	slices.SortFunc(list, func(a, b *User) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return list
}

// Len is the number of users.
func (us *Users) Len() int { return len(us.byName) }

// hashOf is the SCRAM hash of a mechanism, nil for an unknown one.
func hashOf(mechanism string) scram.HashGeneratorFcn {
	switch mechanism {
	case ScramSHA256:
		return scram.SHA256
	case ScramSHA512:
		return scram.SHA512
	}
	return nil
}

// NewCredential derives the stored credential of password for a SCRAM
// mechanism with the given salt and iteration count. The password is
// used as it is, without SASLprep, as Kafka and its clients do.
func NewCredential(mechanism, password string, salt []byte, iterations int) (Credential, error) {
	h := hashOf(mechanism)
	switch {
	case h == nil:
		return Credential{}, fmt.Errorf("%w %q (want %s or %s)", ErrUnsupportedMechanism, mechanism, ScramSHA256, ScramSHA512)
	case iterations < MinIterations || iterations > MaxIterations:
		return Credential{}, fmt.Errorf("auth: %d iterations, want %d to %d", iterations, MinIterations, MaxIterations)
	case len(salt) < minSalt || len(salt) > maxSalt:
		return Credential{}, fmt.Errorf("auth: salt of %d bytes, want %d to %d", len(salt), minSalt, maxSalt)
	}
	cl, err := h.NewClientUnprepped("", password, "")
	if err != nil {
		return Credential{}, err
	}
	sc, err := cl.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iterations})
	if err != nil {
		return Credential{}, err
	}
	return Credential{Salt: slices.Clone(salt), Iterations: iterations, StoredKey: sc.StoredKey, ServerKey: sc.ServerKey}, nil
}

// GenerateCredential is NewCredential with DefaultSaltBytes of salt
// read from rand (crypto/rand.Reader in real use).
func GenerateCredential(rand io.Reader, mechanism, password string, iterations int) (Credential, error) {
	salt := make([]byte, DefaultSaltBytes)
	if _, err := io.ReadFull(rand, salt); err != nil {
		return Credential{}, err
	}
	return NewCredential(mechanism, password, salt, iterations)
}

// CheckName reports whether name can be a user name: 1 to 255 bytes of
// UTF-8 without control characters (PLAIN separates its fields with
// NUL; a log line should not be forged with a newline).
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty user name")
	case len(name) > maxName:
		return fmt.Errorf("user name longer than %d bytes", maxName)
	case !utf8.ValidString(name):
		return fmt.Errorf("user name is not UTF-8")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("user name holds control character %U", r)
		}
	}
	return nil
}

// check validates a user as the file decoder requires.
func (u *User) check() error {
	if err := CheckName(u.Name); err != nil {
		return &FileError{Reason: err.Error()}
	}
	bad := func(format string, args ...any) error {
		return &FileError{User: u.Name, Reason: fmt.Sprintf(format, args...)}
	}
	for mech, c := range u.SCRAM {
		h := hashOf(mech)
		if h == nil {
			return bad("unknown SCRAM mechanism %q (want %s or %s)", mech, ScramSHA256, ScramSHA512)
		}
		size := h().Size()
		switch {
		case c.Iterations < MinIterations || c.Iterations > MaxIterations:
			return bad("%s: %d iterations, want %d to %d", mech, c.Iterations, MinIterations, MaxIterations)
		case len(c.Salt) < minSalt || len(c.Salt) > maxSalt:
			return bad("%s: salt of %d bytes, want %d to %d", mech, len(c.Salt), minSalt, maxSalt)
		case len(c.StoredKey) != size:
			return bad("%s: stored_key of %d bytes, want %d", mech, len(c.StoredKey), size)
		case len(c.ServerKey) != size:
			return bad("%s: server_key of %d bytes, want %d", mech, len(c.ServerKey), size)
		}
	}
	return nil
}
