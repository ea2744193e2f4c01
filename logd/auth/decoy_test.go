package auth

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

// serverFirst starts an exchange of mechanism for user and returns the
// salt (decoded) and iteration count of the server-first message.
func serverFirst(t *testing.T, a *Authenticator, mechanism, user string) (salt []byte, iterations string) {
	t.Helper()
	s, err := a.Start(mechanism)
	if err != nil {
		t.Fatal(err)
	}
	out, done, err := s.Step([]byte("n,,n=" + user + ",r=abcdef"))
	if err != nil || done {
		t.Fatalf("client-first of %s: done %v, err %v", user, done, err)
	}
	_, rest, _ := strings.Cut(string(out), ",s=")
	b64, iterations, _ := strings.Cut(rest, ",i=")
	if salt, err = base64.StdEncoding.DecodeString(b64); err != nil {
		t.Fatalf("salt %q: %v", b64, err)
	}
	return salt, iterations
}

// usersWith is a set of users with a SCRAM-SHA-256 credential each, of
// the given iteration counts and salt lengths.
func usersWith(t *testing.T, shapes ...decoyShape) *Users {
	t.Helper()
	us := NewUsers()
	for i, sh := range shapes {
		c, err := NewCredential(ScramSHA256, "pw", make([]byte, sh.saltBytes), sh.iterations)
		if err != nil {
			t.Fatal(err)
		}
		if err := us.Put(&User{Name: fmt.Sprintf("user%d", i), SCRAM: map[string]Credential{ScramSHA256: c}}); err != nil {
			t.Fatal(err)
		}
	}
	return us
}

// TestDecoyLooksLikeTheUsers: the iteration counts and salt lengths
// that unknown names get are those the users' credentials of the
// mechanism have, each shown (over many names) about as often as users
// have it; with no credential of the mechanism, the defaults that
// `user add` uses.
func TestDecoyLooksLikeTheUsers(t *testing.T) {
	cases := []struct {
		name   string
		users  []decoyShape
		mech   string
		expect map[string]int // iteration count and salt length → share of users, in percent
	}{
		{"all 4096", []decoyShape{{4096, 32}, {4096, 32}}, ScramSHA256, map[string]int{"4096/32": 100}},
		{"mixed", []decoyShape{{4096, 16}, {16384, 32}, {16384, 32}, {16384, 32}}, ScramSHA256, map[string]int{"4096/16": 25, "16384/32": 75}},
		{"no credential of the mechanism", []decoyShape{{4096, 16}}, ScramSHA512, map[string]int{"8192/32": 100}},
		{"no users", nil, ScramSHA256, map[string]int{"8192/32": 100}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(Config{Users: usersWith(t, tc.users...), Rand: seeded(2)})
			if err != nil {
				t.Fatal(err)
			}
			const names = 400
			got := map[string]int{}
			for i := range names {
				salt, iter := serverFirst(t, a, tc.mech, fmt.Sprintf("nobody%d", i))
				got[fmt.Sprintf("%s/%d", iter, len(salt))]++
			}
			for shape, n := range got {
				share, ok := tc.expect[shape]
				if !ok {
					t.Fatalf("decoys show %s (%d of %d names), which no user has; want %v", shape, n, names, tc.expect)
				}
				if pct := 100 * n / names; pct < share-10 || pct > share+10 {
					t.Errorf("decoys show %s for %d%% of names, users %d%%", shape, pct, share)
				}
			}
		})
	}
}

// TestDecoyStableAcrossRestarts: with the same DecoySecret, or without
// one over the same users, an unknown name gets the same salt from
// another Authenticator (a restarted server, whose randomness
// differs), as a real user does; another secret gives another salt.
func TestDecoyStableAcrossRestarts(t *testing.T) {
	us := testUsers(t)
	secret := []byte(strings.Repeat("s", MinDecoySecretBytes))
	start := func(seed uint64, secret []byte) *Authenticator {
		a, err := New(Config{Users: us, Rand: seeded(seed), DecoySecret: secret})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	before, after := start(2, secret), start(3, secret)
	for _, name := range []string{"alice", "mallory"} {
		s1, i1 := serverFirst(t, before, ScramSHA256, name)
		s2, i2 := serverFirst(t, after, ScramSHA256, name)
		if string(s1) != string(s2) || i1 != i2 {
			t.Fatalf("%s: salt %x i=%s, after a restart %x i=%s", name, s1, i1, s2, i2)
		}
	}
	d1, _ := serverFirst(t, start(2, nil), ScramSHA256, "mallory")
	d2, _ := serverFirst(t, start(3, nil), ScramSHA256, "mallory")
	if string(d1) != string(d2) {
		t.Fatalf("without DecoySecret, over the same users: decoy salt %x, after a restart %x", d1, d2)
	}
	other := start(2, []byte(strings.Repeat("t", MinDecoySecretBytes)))
	s1, _ := serverFirst(t, before, ScramSHA256, "mallory")
	if s3, _ := serverFirst(t, other, ScramSHA256, "mallory"); string(s1) == string(s3) {
		t.Fatal("two secrets gave the same decoy salt")
	}
}
