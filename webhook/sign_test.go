package webhook

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The specification's published test vector (REFERENCE.md).
const (
	vectorSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTS     = 1614265330
	vectorBody   = `{"test": 2432232314}`
	vectorSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func mustSecret(t testing.TB, s string) Secret {
	t.Helper()
	sec, err := ParseSecret(s)
	if err != nil {
		t.Fatal(err)
	}
	return sec
}

func TestSpecVectorSign(t *testing.T) {
	s := mustSecret(t, vectorSecret)
	if got := s.Sign(vectorID, time.Unix(vectorTS, 0), []byte(vectorBody)); got != vectorSig {
		t.Fatalf("Sign = %s, want %s", got, vectorSig)
	}
}

func TestSpecVectorVerify(t *testing.T) {
	h := http.Header{}
	h.Set(HeaderID, vectorID)
	h.Set(HeaderTimestamp, "1614265330")
	h.Set(HeaderSignature, vectorSig)
	v := &Verifier{Secrets: []Secret{mustSecret(t, vectorSecret)}, Now: func() time.Time { return time.Unix(vectorTS, 0) }}
	if err := v.Verify(h, []byte(vectorBody)); err != nil {
		t.Fatalf("Verify(spec vector) = %v", err)
	}
	if err := v.Verify(h, []byte(strings.Replace(vectorBody, "2", "3", 1))); !errors.Is(err, ErrNoMatchingSignature) {
		t.Fatalf("Verify(tampered body) = %v, want ErrNoMatchingSignature", err)
	}
}

// TestSpecVectorBareSecret: the official libraries take the secret with
// or without its whsec_ prefix (they strip it when present, then decode
// the base64), so a receiver given the bare base64 form verifies too,
// and it reads back as the prefixed form.
func TestSpecVectorBareSecret(t *testing.T) {
	bare := strings.TrimPrefix(vectorSecret, SymmetricPrefix)
	s, err := ParseSecret(bare)
	if err != nil {
		t.Fatalf("ParseSecret(the spec's secret without %s) = %v", SymmetricPrefix, err)
	}
	if got := s.Sign(vectorID, time.Unix(vectorTS, 0), []byte(vectorBody)); got != vectorSig {
		t.Fatalf("Sign = %s, want %s", got, vectorSig)
	}
	if s.String() != vectorSecret {
		t.Fatalf("String() = %s, want %s", s, vectorSecret)
	}
}
