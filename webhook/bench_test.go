package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// benchBody is a 1 KiB JSON-ish body.
var benchBody = bytes.Repeat([]byte(`{"k":"0123456789abcdef"},`), 41)[:1024]

// BenchmarkHMACBaseline is the floor Sign and Verify are measured
// against: one HMAC-SHA256 of the same signed content, nothing else.
func BenchmarkHMACBaseline(b *testing.B) {
	key := newSecret(b, 1).hmacKey
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	for b.Loop() {
		m := hmac.New(sha256.New, key)
		writeContent(m, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", benchBody)
		m.Sum(nil)
	}
}

func BenchmarkSign(b *testing.B) {
	s := newSecret(b, 1)
	ts := time.Unix(1614265330, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	for b.Loop() {
		s.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", ts, benchBody)
	}
}

func BenchmarkVerify(b *testing.B) {
	s := newSecret(b, 1)
	ts := time.Unix(1614265330, 0)
	h := headers("msg_p5jXN8AQM9LWM0D4loKWxJek", ts, benchBody, s)
	v := &Verifier{Secrets: []Secret{s}, Now: func() time.Time { return ts }}
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	for b.Loop() {
		if err := v.Verify(h, benchBody); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyEd25519(b *testing.B) {
	priv, pub, err := NewAsymmetricSecret(seeded(9))
	if err != nil {
		b.Fatal(err)
	}
	ts := time.Unix(1614265330, 0)
	h := headers("msg_p5jXN8AQM9LWM0D4loKWxJek", ts, benchBody, priv)
	v := &Verifier{PublicKeys: []PublicKey{pub}, Now: func() time.Time { return ts }}
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Verify(h, benchBody); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReceiver is a whole verified, new delivery through the
// Receiver (body read, verify, dedup, hand on), without the network. The
// clock moves a second a delivery, so past DefaultDedupSize deliveries
// the dedup cache evicts an id out of tolerance for each new one.
func BenchmarkReceiver(b *testing.B) {
	s := newSecret(b, 1)
	ts := time.Unix(1614265330, 0)
	rc, err := NewReceiver(ReceiverConfig{Verifier: &Verifier{Secrets: []Secret{s}, Now: func() time.Time { return ts }}},
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	i := 0
	for b.Loop() {
		i++
		ts = ts.Add(time.Second)
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(benchBody))
		SetHeaders(r.Header, "msg_"+strconv.Itoa(i), ts, benchBody, s)
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, r)
		if w.Code != http.StatusNoContent {
			b.Fatal(w.Code)
		}
	}
}
