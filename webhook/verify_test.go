package webhook

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"
)

// seeded is a deterministic reader for keys in tests.
func seeded(seed uint64) *bytes.Reader {
	r := mrand.New(mrand.NewPCG(seed, seed))
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return bytes.NewReader(b)
}

func newSecret(t testing.TB, seed uint64) Secret {
	t.Helper()
	s, err := NewSecret(seeded(seed))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func headers(id string, ts time.Time, body []byte, secrets ...Secret) http.Header {
	h := http.Header{}
	SetHeaders(h, id, ts, body, secrets...)
	return h
}

func TestParseSecret(t *testing.T) {
	b := func(n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, n)) }
	for _, c := range []struct {
		in string
		ok bool
	}{
		{vectorSecret, true},
		{"whsec_" + b(24), true},
		{"whsec_" + b(64), true},
		{"  whsec_" + b(32) + "\n", true},
		{"whsec_" + b(23), false},
		{"whsec_" + b(65), false},
		{"whsec_" + b(33), true}, // 33 bytes: no padding at all
		{"whsec_" + strings.TrimRight(b(25), "="), false},
		{"whsec_" + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 30)), false},
		{"whsec_", false},
		{b(32), true}, // the bare form, as the official libraries take it
		{b(23), false},
		{"whsec" + b(32), false},
		{"whsk_" + b(32), true},
		{"whsk_" + b(31), false},
		{"whsk_" + b(64), false}, // public half does not match the seed
		{"whpk_" + b(32), false},
		{"", false},
	} {
		_, err := ParseSecret(c.in)
		if (err == nil) != c.ok {
			t.Errorf("ParseSecret(%q) = %v, want ok=%v", c.in, err, c.ok)
		}
		if err != nil {
			if !errors.Is(err, ErrBadSecret) {
				t.Errorf("ParseSecret(%q) = %v, not ErrBadSecret", c.in, err)
			}
			if len(c.in) > 12 && strings.Contains(err.Error(), strings.TrimSpace(c.in)[6:]) {
				t.Errorf("ParseSecret error %q shows the secret", err)
			}
		}
	}
}

func TestSecretRoundTrip(t *testing.T) {
	s, err := NewSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.String(), "whsec_") || len(s.hmacKey) != SecretLen {
		t.Fatalf("NewSecret = %s (%d bytes)", s, len(s.hmacKey))
	}
	if back := mustSecret(t, s.String()); !bytes.Equal(back.hmacKey, s.hmacKey) {
		t.Fatal("ParseSecret(String()) differs")
	}
	priv, pub, err := NewAsymmetricSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(priv.String(), "whsk_") || !strings.HasPrefix(pub.String(), "whpk_") || !priv.Asymmetric() {
		t.Fatalf("NewAsymmetricSecret = %s, %s", priv, pub)
	}
	back := mustSecret(t, priv.String())
	if !bytes.Equal(back.edKey, priv.edKey) {
		t.Fatal("ParseSecret(whsk_) differs")
	}
	full := "whsk_" + base64.StdEncoding.EncodeToString(priv.edKey)
	if back := mustSecret(t, full); !bytes.Equal(back.edKey, priv.edKey) {
		t.Fatal("ParseSecret(64-byte whsk_) differs")
	}
	pk, err := ParsePublicKey(pub.String())
	if err != nil || !bytes.Equal(pk.key, pub.key) {
		t.Fatalf("ParsePublicKey(String()) = %v", err)
	}
	if p2, ok := priv.PublicKey(); !ok || p2.String() != pub.String() {
		t.Fatal("Secret.PublicKey differs from NewAsymmetricSecret's")
	}
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "secret", s, "key", priv)
	if strings.Contains(logged.String(), s.String()[6:]) || strings.Contains(logged.String(), priv.String()[5:]) || !strings.Contains(logged.String(), "secret=whsec_…") {
		t.Fatalf("slog shows a secret: %s", logged.String())
	}
	if _, err := NewSecret(bytes.NewReader(make([]byte, 5))); err == nil {
		t.Fatal("NewSecret from a short reader succeeded")
	}
}

func TestVerifyRotation(t *testing.T) {
	old, cur, other := newSecret(t, 1), newSecret(t, 2), newSecret(t, 3)
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"type":"invoice.paid"}`)
	h := headers("msg_1", now, body, old, cur)
	if got := strings.Count(h.Get(HeaderSignature), "v1,"); got != 2 {
		t.Fatalf("two secrets, %d entries: %q", got, h.Get(HeaderSignature))
	}
	clock := func() time.Time { return now }
	for _, c := range []struct {
		name    string
		secrets []Secret
		want    error
	}{
		{"old only", []Secret{old}, nil},
		{"new only", []Secret{cur}, nil},
		{"other then new", []Secret{other, cur}, nil},
		{"other", []Secret{other}, ErrNoMatchingSignature},
	} {
		v := &Verifier{Secrets: c.secrets, Now: clock}
		if err := v.Verify(h, body); !errors.Is(err, c.want) {
			t.Errorf("%s: Verify = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestVerifyTolerance(t *testing.T) {
	s := newSecret(t, 1)
	sent := time.Unix(1_700_000_000, 0)
	body := []byte(`{}`)
	h := headers("msg_1", sent, body, s)
	for _, c := range []struct {
		skew time.Duration // now - sent
		tol  time.Duration
		want error
	}{
		{0, 0, nil},
		{5 * time.Minute, 0, nil},
		{-5 * time.Minute, 0, nil},
		{5*time.Minute + time.Second, 0, ErrTimestampTooOld},
		{-5*time.Minute - time.Second, 0, ErrTimestampTooNew},
		{time.Hour, 0, ErrTimestampTooOld},
		{time.Hour, 2 * time.Hour, nil},
		{-time.Hour, 2 * time.Hour, nil},
		{11 * time.Second, 10 * time.Second, ErrTimestampTooOld},
		{-11 * time.Second, 10 * time.Second, ErrTimestampTooNew},
	} {
		v := &Verifier{Secrets: []Secret{s}, Tolerance: c.tol, Now: func() time.Time { return sent.Add(c.skew) }}
		if err := v.Verify(h, body); !errors.Is(err, c.want) {
			t.Errorf("skew %s tolerance %s: Verify = %v, want %v", c.skew, c.tol, err, c.want)
		}
	}
}

// TestVerifyFarTimestamps: timestamps so far from now that the Duration
// between them saturates are refused too (the negated minimum Duration
// overflowed, and a signed message ~292 years ahead verified forever).
func TestVerifyFarTimestamps(t *testing.T) {
	s := newSecret(t, 1)
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{}`)
	v := &Verifier{Secrets: []Secret{s}, Now: func() time.Time { return now }}
	for _, c := range []struct {
		sent int64
		want error
	}{
		{now.Unix() + 301, ErrTimestampTooNew},
		{20_000_000_000, ErrTimestampTooNew},
		{999_999_999_999_999_999, ErrTimestampTooNew},
		{0, ErrTimestampTooOld},
	} {
		if err := v.Verify(headers("msg_1", time.Unix(c.sent, 0), body, s), body); !errors.Is(err, c.want) {
			t.Errorf("timestamp %d: Verify = %v, want %v", c.sent, err, c.want)
		}
	}
}

func TestVerifyTampering(t *testing.T) {
	s := newSecret(t, 1)
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"amount":100}`)
	v := &Verifier{Secrets: []Secret{s}, Now: func() time.Time { return now }}
	good := headers("msg_1", now, body, s)
	if err := v.Verify(good, body); err != nil {
		t.Fatalf("untouched: %v", err)
	}
	mod := func(f func(h http.Header)) http.Header {
		h := good.Clone()
		f(h)
		return h
	}
	sig := good.Get(HeaderSignature)
	raw, _ := base64.StdEncoding.DecodeString(sig[3:])
	raw[0] ^= 1
	for _, c := range []struct {
		name string
		h    http.Header
		body []byte
		want error
	}{
		{"body", good, []byte(`{"amount":900}`), ErrNoMatchingSignature},
		{"body appended", good, append(append([]byte{}, body...), ' '), ErrNoMatchingSignature},
		{"id", mod(func(h http.Header) { h.Set(HeaderID, "msg_2") }), body, ErrNoMatchingSignature},
		{"timestamp", mod(func(h http.Header) { h.Set(HeaderTimestamp, "1700000001") }), body, ErrNoMatchingSignature},
		{"signature bit", mod(func(h http.Header) { h.Set(HeaderSignature, "v1,"+base64.StdEncoding.EncodeToString(raw)) }), body, ErrNoMatchingSignature},
		{"signature as v1a", mod(func(h http.Header) { h.Set(HeaderSignature, "v1a,"+sig[3:]) }), body, ErrNoMatchingSignature},
		{"unknown version only", mod(func(h http.Header) { h.Set(HeaderSignature, "v2,"+sig[3:]) }), body, ErrNoMatchingSignature},
		{"unknown versions ignored", mod(func(h http.Header) { h.Set(HeaderSignature, "v2,xyz v1a,abc= junk "+sig) }), body, nil},
		{"split signature lines", mod(func(h http.Header) { h.Set(HeaderSignature, "v1,AAAA"); h.Add(HeaderSignature, sig) }), body, nil},
		{"no id", mod(func(h http.Header) { h.Del(HeaderID) }), body, ErrMissingHeaders},
		{"no timestamp", mod(func(h http.Header) { h.Del(HeaderTimestamp) }), body, ErrMissingHeaders},
		{"no signature", mod(func(h http.Header) { h.Del(HeaderSignature) }), body, ErrMissingHeaders},
		{"timestamp not integer", mod(func(h http.Header) { h.Set(HeaderTimestamp, "1700000000.5") }), body, ErrMalformedHeaders},
		{"timestamp signed", mod(func(h http.Header) { h.Set(HeaderTimestamp, "+1700000000") }), body, ErrMalformedHeaders},
		{"timestamp huge", mod(func(h http.Header) { h.Set(HeaderTimestamp, "99999999999999999999") }), body, ErrMalformedHeaders},
		{"id too long", mod(func(h http.Header) { h.Set(HeaderID, strings.Repeat("x", MaxIDLen+1)) }), body, ErrMalformedHeaders},
		{"too many entries", mod(func(h http.Header) { h.Set(HeaderSignature, strings.Repeat("v1,AAAA ", MaxSignatureEntries)+sig) }), body, ErrMalformedHeaders},
	} {
		if err := v.Verify(c.h, c.body); !errors.Is(err, c.want) {
			t.Errorf("%s: Verify = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestVerifyEd25519(t *testing.T) {
	priv, pub, err := NewAsymmetricSecret(seeded(9))
	if err != nil {
		t.Fatal(err)
	}
	sym := newSecret(t, 1)
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"ok":true}`)
	h := headers("msg_1", now, body, sym, priv)
	entries := strings.Fields(h.Get(HeaderSignature))
	if len(entries) != 2 || !strings.HasPrefix(entries[0], "v1,") || !strings.HasPrefix(entries[1], "v1a,") {
		t.Fatalf("webhook-signature = %q", h.Get(HeaderSignature))
	}
	clock := func() time.Time { return now }
	onlyV1a := h.Clone()
	onlyV1a.Set(HeaderSignature, entries[1])
	_, otherPub, _ := NewAsymmetricSecret(seeded(10))
	for _, c := range []struct {
		name string
		v    Verifier
		h    http.Header
		body []byte
		want error
	}{
		{"public key", Verifier{PublicKeys: []PublicKey{pub}}, onlyV1a, body, nil},
		{"private key verifies too", Verifier{Secrets: []Secret{priv}}, onlyV1a, body, nil},
		{"wrong public key", Verifier{PublicKeys: []PublicKey{otherPub}}, onlyV1a, body, ErrNoMatchingSignature},
		{"tampered body", Verifier{PublicKeys: []PublicKey{pub}}, onlyV1a, []byte(`{"ok":false}`), ErrNoMatchingSignature},
		{"symmetric secret ignores v1a", Verifier{Secrets: []Secret{newSecret(t, 5)}}, h, body, ErrNoMatchingSignature},
		{"mixed header, v1 secret", Verifier{Secrets: []Secret{sym}}, h, body, nil},
		{"mixed header, public key", Verifier{PublicKeys: []PublicKey{pub}}, h, body, nil},
	} {
		c.v.Now = clock
		if err := c.v.Verify(c.h, c.body); !errors.Is(err, c.want) {
			t.Errorf("%s: Verify = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestVerifierConfig(t *testing.T) {
	h := headers("msg_1", time.Now(), nil, newSecret(t, 1))
	for _, v := range []*Verifier{{}, {Secrets: []Secret{{}}}, {Secrets: []Secret{newSecret(t, 1)}, Tolerance: -time.Second}} {
		var ce *ConfigError
		if err := v.Verify(h, nil); !errors.As(err, &ce) || !errors.Is(err, ErrBadConfig) {
			t.Errorf("Verify with %+v = %v, want a ConfigError", v, err)
		}
	}
}

// FuzzParseSignatureHeader: any header parses without panicking, within
// its bounds, and every entry of a header we produce survives.
func FuzzParseSignatureHeader(f *testing.F) {
	f.Add(vectorSig)
	f.Add("v1,abc= v1a,def= v2,x")
	f.Add("v1," + strings.Repeat("A", 5000))
	f.Add("  ,  ,, v1,")
	f.Fuzz(func(t *testing.T, h string) {
		entries, err := parseSignatureHeader(h)
		if err != nil {
			if !errors.Is(err, ErrMalformedHeaders) {
				t.Fatalf("error %v is not ErrMalformedHeaders", err)
			}
			return
		}
		if len(entries) > MaxSignatureEntries {
			t.Fatalf("%d entries", len(entries))
		}
		for _, e := range entries {
			if e.version != VersionHMAC && e.version != VersionEd25519 {
				t.Fatalf("version %q kept", e.version)
			}
			again := e.version + "," + base64.StdEncoding.EncodeToString(e.sig)
			if !strings.Contains(h, again) {
				t.Fatalf("entry %q not in header %q", again, h)
			}
		}
	})
}

// FuzzVerify: arbitrary header values and bodies never panic and never
// verify without the secret; a body signed by us always verifies.
func FuzzVerify(f *testing.F) {
	s := mustSecret(f, vectorSecret)
	now := time.Unix(vectorTS, 0)
	f.Add(vectorID, "1614265330", vectorSig, []byte(vectorBody))
	f.Add("", "", "", []byte{})
	f.Add("id", "-1", "v1,", []byte("x"))
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		v := &Verifier{Secrets: []Secret{s}, Now: func() time.Time { return now }}
		err := v.VerifyValues(id, ts, sig, body)
		if err == nil && sig != s.sign(id, ts, body) && !strings.Contains(sig, s.sign(id, ts, body)) {
			t.Fatalf("verified %q %q %q without our signature", id, ts, sig)
		}
		if id != "" && len(id) <= MaxIDLen {
			h := headers(id, now, body, s)
			if err := v.Verify(h, body); err != nil {
				t.Fatalf("our own signature of id %q: %v", id, err)
			}
		}
	})
}
