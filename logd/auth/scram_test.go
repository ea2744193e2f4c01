package auth

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	fscram "github.com/twmb/franz-go/pkg/sasl/scram"
	xscram "github.com/xdg-go/scram"
)

// seeded is a deterministic randomness source for tests.
func seeded(seed uint64) *rand.ChaCha8 {
	var s [32]byte
	s[0] = byte(seed)
	return rand.NewChaCha8(s)
}

// testUsers: alice has both SCRAM credentials, bob only SHA-512, carol
// only a client certificate.
func testUsers(t testing.TB) *Users {
	t.Helper()
	us := NewUsers()
	r := seeded(1)
	alice := &User{Name: "alice", SCRAM: map[string]Credential{}, Grants: []Grant{{Produce, "orders."}}}
	for _, m := range ScramMechanisms {
		c, err := GenerateCredential(r, m, "alice-secret", MinIterations)
		if err != nil {
			t.Fatal(err)
		}
		alice.SCRAM[m] = c
	}
	c, err := GenerateCredential(r, ScramSHA512, "bob-secret", MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	bob := &User{Name: "bob", SCRAM: map[string]Credential{ScramSHA512: c}}
	carol := &User{Name: "carol", Grants: []Grant{{Consume, AnyName}}}
	for _, u := range []*User{alice, bob, carol} {
		if err := us.Put(u); err != nil {
			t.Fatal(err)
		}
	}
	return us
}

func newAuth(t testing.TB, us *Users) *Authenticator {
	t.Helper()
	a, err := New(Config{Users: us, Rand: seeded(2)})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// rfc7677Auth is an Authenticator of RFC 7677 §3's example: user
// "user" with password "pencil", its salt and iteration count, and the
// server nonce of the example.
func rfc7677Auth(t testing.TB) *Authenticator {
	t.Helper()
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	c, err := NewCredential(ScramSHA256, "pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	us := NewUsers()
	if err := us.Put(&User{Name: "user", SCRAM: map[string]Credential{ScramSHA256: c}}); err != nil {
		t.Fatal(err)
	}
	a := newAuth(t, us)
	a.nonce = func() (string, error) { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", nil }
	return a
}

// TestRFC7677Vector runs the SCRAM-SHA-256 exchange of RFC 7677 §3
// through the server: user "user", password "pencil", its salt,
// iteration count and nonces. The server-first and server-final
// messages must be the RFC's byte for byte, which checks the stored
// credential derivation (StoredKey verifies the proof, ServerKey makes
// the signature).
func TestRFC7677Vector(t *testing.T) {
	a := rfc7677Auth(t)
	s, err := a.Start(ScramSHA256)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct{ client, server string }{
		{"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
			"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"},
		{"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
			"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="},
	}
	for i, st := range steps {
		out, done, err := s.Step([]byte(st.client))
		if err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
		if string(out) != st.server {
			t.Fatalf("step %d: server said %q, RFC 7677 says %q", i+1, out, st.server)
		}
		if done != (i == 1) {
			t.Fatalf("step %d: done %v", i+1, done)
		}
	}
	if u := s.User(); u == nil || u.Name != "user" {
		t.Fatalf("authenticated %v, want user", u)
	}
}

// converse runs a franz-go client mechanism against a server session
// and returns the authenticated user or the server's error.
func converse(t *testing.T, a *Authenticator, m sasl.Mechanism) (*User, error) {
	t.Helper()
	s, err := a.Start(m.Name())
	if err != nil {
		return nil, err
	}
	cs, msg, err := m.Authenticate(context.Background(), "127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	for {
		out, done, err := s.Step(msg)
		if err != nil {
			return nil, err
		}
		clientDone, next, err := cs.Challenge(out)
		if err != nil {
			t.Fatalf("client refused the server's %q: %v", out, err)
		}
		if done {
			if !clientDone || len(next) > 0 {
				t.Fatalf("server done, client done %v with %q", clientDone, next)
			}
			return s.User(), nil
		}
		msg = next
	}
}

func scramAuth(mech, user, pass string) sasl.Mechanism {
	a := fscram.Auth{User: user, Pass: pass}
	if mech == ScramSHA512 {
		return a.AsSha512Mechanism()
	}
	return a.AsSha256Mechanism()
}

func plainAuth(user, pass, zid string) sasl.Mechanism {
	return plain.Auth{User: user, Pass: pass, Zid: zid}.AsMechanism()
}

// TestClientsAuthenticate: franz-go's SCRAM-SHA-256, SCRAM-SHA-512 and
// PLAIN clients against the server; wrong passwords, unknown users,
// mechanisms the user has no credential for, a certificate-only user
// and a foreign authorization identity are all refused with
// ErrBadCredentials.
func TestClientsAuthenticate(t *testing.T) {
	a := newAuth(t, testUsers(t))
	cases := []struct {
		name string
		m    sasl.Mechanism
		want string // user, or "" for refused
	}{
		{"sha256", scramAuth(ScramSHA256, "alice", "alice-secret"), "alice"},
		{"sha512", scramAuth(ScramSHA512, "alice", "alice-secret"), "alice"},
		{"sha512 only", scramAuth(ScramSHA512, "bob", "bob-secret"), "bob"},
		{"plain", plainAuth("alice", "alice-secret", ""), "alice"},
		{"plain own authzid", plainAuth("alice", "alice-secret", "alice"), "alice"},
		{"plain sha512 user", plainAuth("bob", "bob-secret", ""), "bob"},
		{"sha256 wrong password", scramAuth(ScramSHA256, "alice", "alice-secreT"), ""},
		{"sha512 wrong password", scramAuth(ScramSHA512, "alice", "nope"), ""},
		{"plain wrong password", plainAuth("alice", "alice-secre", ""), ""},
		{"sha256 unknown user", scramAuth(ScramSHA256, "mallory", "alice-secret"), ""},
		{"plain unknown user", plainAuth("mallory", "x", ""), ""},
		{"sha256 without a sha256 credential", scramAuth(ScramSHA256, "bob", "bob-secret"), ""},
		{"sha256 certificate-only user", scramAuth(ScramSHA256, "carol", "x"), ""},
		{"plain certificate-only user", plainAuth("carol", "x", ""), ""},
		{"plain acting as another", plainAuth("alice", "alice-secret", "bob"), ""},
		{"password of another user", scramAuth(ScramSHA512, "bob", "alice-secret"), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, err := converse(t, a, c.m)
			if c.want == "" {
				if !errors.Is(err, ErrAuthFailed) || !errors.Is(err, ErrBadCredentials) {
					t.Fatalf("got user %v, err %v; want ErrBadCredentials", u, err)
				}
				return
			}
			if err != nil || u == nil || u.Name != c.want {
				t.Fatalf("got user %v, err %v; want %s", u, err, c.want)
			}
		})
	}
}

// TestScramUnknownUserLooksKnown: an unknown user gets a server-first
// message like a real user's (a salt and the users' iteration count,
// 4096 here), the same salt on every attempt, and fails only at the
// proof.
func TestScramUnknownUserLooksKnown(t *testing.T) {
	a := newAuth(t, testUsers(t))
	first := func(user string) string {
		s, err := a.Start(ScramSHA256)
		if err != nil {
			t.Fatal(err)
		}
		out, done, err := s.Step([]byte("n,,n=" + user + ",r=abcdef"))
		if err != nil || done {
			t.Fatalf("client-first of %s: done %v, err %v", user, done, err)
		}
		_, salt, _ := strings.Cut(string(out), ",s=")
		return salt
	}
	s1, s2 := first("mallory"), first("mallory")
	if s1 != s2 || !strings.HasSuffix(s1, ",i=4096") {
		t.Fatalf("decoy salts %q and %q: want equal, with i=4096", s1, s2)
	}
	if first("trudy") == s1 {
		t.Fatal("two unknown users got the same decoy salt")
	}
}

// TestScramMalformed: garbage, an exchange driven past its end and an
// oversized message are malformed, not credential failures.
func TestScramMalformed(t *testing.T) {
	a := newAuth(t, testUsers(t))
	for _, msg := range []string{"", "garbage", "y,,n=alice", "n,,r=abc", strings.Repeat("x", maxMessage+1)} {
		s, _ := a.Start(ScramSHA512)
		if _, _, err := s.Step([]byte(msg)); !errors.Is(err, ErrMalformed) {
			t.Errorf("client-first %.20q: err %v, want ErrMalformed", msg, err)
		}
	}
	s, _ := a.Start(Plain)
	if _, _, err := s.Step([]byte("\x00alice\x00alice-secret")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Step([]byte("\x00alice\x00alice-secret")); !errors.Is(err, ErrMalformed) {
		t.Fatalf("second PLAIN message: %v, want ErrMalformed", err)
	}
}

func TestMechanisms(t *testing.T) {
	a, err := New(Config{Users: testUsers(t), Mechanisms: []string{ScramSHA512}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Start(Plain); !errors.Is(err, ErrUnsupportedMechanism) {
		t.Fatalf("PLAIN when only SCRAM-SHA-512 is offered: %v", err)
	}
	if _, err := a.Start("GSSAPI"); !errors.Is(err, ErrUnsupportedMechanism) {
		t.Fatalf("GSSAPI: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	us := NewUsers()
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{}, "Users"},
		{Config{Users: us, Mechanisms: []string{}}, "Mechanisms"},
		{Config{Users: us, Mechanisms: []string{"SCRAM-SHA-1"}}, "Mechanisms"},
		{Config{Users: us, Mechanisms: []string{Plain, Plain}}, "Mechanisms"},
		{Config{Users: us, DecoySecret: make([]byte, MinDecoySecretBytes-1)}, "DecoySecret"},
		{Config{Users: us, DecoySecret: []byte{}}, "DecoySecret"},
	} {
		_, err := New(c.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || !errors.Is(err, ErrBadConfig) {
			t.Errorf("%+v: %v, want a ConfigError on %s", c.cfg, err, c.field)
		}
	}
}

// TestScramAuthzID: a SCRAM client that asks to act as another user
// (xdg-go's client sends the authzid in the GS2 header) is refused even
// with the right password; its own name as authzid is fine.
func TestScramAuthzID(t *testing.T) {
	a := newAuth(t, testUsers(t))
	for _, c := range []struct {
		zid string
		ok  bool
	}{{"", true}, {"alice", true}, {"bob", false}} {
		cl, err := xscram.SHA256.NewClientUnprepped("alice", "alice-secret", c.zid)
		if err != nil {
			t.Fatal(err)
		}
		conv := cl.NewConversation()
		s, _ := a.Start(ScramSHA256)
		msg, err := conv.Step("")
		if err != nil {
			t.Fatal(err)
		}
		var serr error
		for !conv.Done() && serr == nil {
			var out []byte
			out, _, serr = s.Step([]byte(msg))
			if serr == nil {
				msg, err = conv.Step(string(out))
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		if ok := serr == nil && s.User() != nil; ok != c.ok {
			t.Errorf("authzid %q: accepted %v (%v), want %v", c.zid, ok, serr, c.ok)
		}
	}
}

// TestScramDoubledNonce: a client-final message that repeats the client
// nonce before the server's whole nonce, as librdkafka before 2.6.1
// (Debian's 2.0.2) sends it, is verified over the message as sent:
// accepted with the right password, with the right server signature;
// refused with a wrong one; a nonce that is neither form is refused.
func TestScramDoubledNonce(t *testing.T) {
	a := rfc7677Auth(t)
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	const (
		cnonce      = "rOprNGfwEbeRWgbNEkqO"
		clientFirst = "n,,n=user,r=" + cnonce
		serverFirst = "r=" + cnonce + "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	)
	// final computes a client-final message for password with nonce r.
	final := func(password, r string) (msg, verifier string) {
		sp, err := pbkdf2.Key(sha256.New, password, salt, 4096, 32)
		if err != nil {
			t.Fatal(err)
		}
		mac := func(key []byte, s string) []byte {
			m := hmac.New(sha256.New, key)
			m.Write([]byte(s))
			return m.Sum(nil)
		}
		clientKey := mac(sp, "Client Key")
		stored := sha256.Sum256(clientKey)
		withoutProof := "c=biws,r=" + r
		authMessage := clientFirst[3:] + "," + serverFirst + "," + withoutProof
		proof := mac(stored[:], authMessage)
		for i := range proof {
			proof[i] ^= clientKey[i]
		}
		return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof),
			"v=" + base64.StdEncoding.EncodeToString(mac(mac(sp, "Server Key"), authMessage))
	}
	nonce := cnonce + "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	for _, c := range []struct {
		name, password, r string
		ok                bool
	}{
		{"exact nonce", "pencil", nonce, true},
		{"doubled client nonce", "pencil", cnonce + nonce, true},
		{"doubled, wrong password", "pen", cnonce + nonce, false},
		{"other prefix", "pencil", "x" + nonce, false},
		{"client nonce only", "pencil", cnonce, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := a.Start(ScramSHA256)
			out, _, err := s.Step([]byte(clientFirst))
			if err != nil || string(out) != serverFirst {
				t.Fatalf("server-first %q, %v", out, err)
			}
			msg, verifier := final(c.password, c.r)
			out, done, err := s.Step([]byte(msg))
			if !c.ok {
				if err == nil || s.User() != nil {
					t.Fatalf("accepted: %q", out)
				}
				return
			}
			if err != nil || !done || string(out) != verifier || s.User() == nil {
				t.Fatalf("got %q, done %v, err %v; want %q", out, done, err, verifier)
			}
			if _, _, err := s.Step([]byte(msg)); !errors.Is(err, ErrMalformed) {
				t.Fatalf("a third message: %v", err)
			}
		})
	}
}

// FuzzScramExchange: any client-first and client-final messages are
// either refused or, only with the RFC 7677 password's proof,
// authenticate "user"; never a panic.
func FuzzScramExchange(f *testing.F) {
	a := rfc7677Auth(f)
	f.Add([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"),
		[]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	f.Add([]byte("n,,n=user,r=abc"), []byte("c=biws,r=abcabc%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA"))
	f.Add([]byte("n,a=user,n=user,r=abc"), []byte("c=bixx,r=abc,p="))
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s, err := a.Start(ScramSHA256)
		if err != nil {
			t.Fatal(err)
		}
		if _, done, err := s.Step(first); err != nil || done {
			return
		}
		_, _, err = s.Step(final)
		if u := s.User(); u != nil && (err != nil || u.Name != "user") {
			t.Fatalf("user %v with error %v", u, err)
		}
	})
}

// BenchmarkLogin is the server's CPU per login: a SCRAM exchange (the
// client does the PBKDF2 work; the server a few HMACs) against PLAIN
// (the server salts and hashes the password: PBKDF2 with the stored
// iteration count), both at DefaultIterations.
func BenchmarkLogin(b *testing.B) {
	us := NewUsers()
	u := &User{Name: "alice", SCRAM: map[string]Credential{}}
	for _, m := range ScramMechanisms {
		c, err := GenerateCredential(seeded(3), m, "alice-secret", DefaultIterations)
		if err != nil {
			b.Fatal(err)
		}
		u.SCRAM[m] = c
	}
	if err := us.Put(u); err != nil {
		b.Fatal(err)
	}
	a := newAuth(b, us)
	b.Run("SCRAM-SHA-256", func(b *testing.B) {
		// The client's messages, computed once: the server's work alone is measured.
		cl, _ := xscram.SHA256.NewClientUnprepped("alice", "alice-secret", "")
		a.nonce = func() (string, error) { return "fixed-server-nonce", nil }
		defer func() { a.nonce = a.randomNonce }()
		conv := cl.NewConversation()
		first, _ := conv.Step("")
		s, _ := a.Start(ScramSHA256)
		out, _, _ := s.Step([]byte(first))
		final, _ := conv.Step(string(out))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			s, _ := a.Start(ScramSHA256)
			s.Step([]byte(first))
			if _, _, err := s.Step([]byte(final)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PLAIN", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			s, _ := a.Start(Plain)
			if _, _, err := s.Step([]byte("\x00alice\x00alice-secret")); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestScramClientNonceRequired: RFC 5802 §7's client nonce is one or
// more printable characters (0x21 to 0x7E but ','), as Kafka's
// ScramMessages requires; an empty one, or one holding a space or a
// control character, is malformed, before any credential is shown.
func TestScramClientNonceRequired(t *testing.T) {
	a := newAuth(t, testUsers(t))
	for _, nonce := range []string{"", "a b", "a\x01b", "caf\u00e9"} {
		s, _ := a.Start(ScramSHA256)
		if out, _, err := s.Step([]byte("n,,n=alice,r=" + nonce)); !errors.Is(err, ErrMalformed) {
			t.Errorf("client nonce %q: server-first %q, err %v, want ErrMalformed", nonce, out, err)
		}
	}
	s, _ := a.Start(ScramSHA256)
	if _, _, err := s.Step([]byte("n,,n=alice,r=" + "!~rOprNGfwEbeRWgbNEkqO")); err != nil {
		t.Fatalf("a printable client nonce: %v", err)
	}
}
