package webhook

import (
	"crypto/ed25519"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of Standard Webhooks.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Signature versions.
const (
	// VersionHMAC is HMAC-SHA256 under a whsec_ secret.
	VersionHMAC = "v1"
	// VersionEd25519 is an ed25519 signature under a whsk_ key.
	VersionEd25519 = "v1a"
)

// Timestamp is the webhook-timestamp value for ts: integer seconds since
// the Unix epoch, truncated.
func Timestamp(ts time.Time) string { return strconv.FormatInt(ts.Unix(), 10) }

// Sign returns one signature entry for the message id sent at ts with
// body: "v1,<base64 HMAC-SHA256 of id.ts.body>" for a symmetric secret,
// "v1a,<base64 ed25519 signature of id.ts.body>" for an ed25519 one. ts
// is signed as Timestamp(ts). It panics on the zero Secret.
//
// Receivers in JavaScript (the official standardwebhooks package) decode
// the body as UTF-8 before hashing, so only bodies that are valid UTF-8
// (JSON is) verify there.
func (s Secret) Sign(id string, ts time.Time, body []byte) string {
	return s.sign(id, Timestamp(ts), body)
}

func (s Secret) sign(id, ts string, body []byte) string {
	switch {
	case s.hmacKey != nil:
		return VersionHMAC + "," + std.EncodeToString(mac(s.hmacKey, id, ts, body))
	case s.edKey != nil:
		return VersionEd25519 + "," + std.EncodeToString(ed25519.Sign(s.edKey, content(id, ts, body)))
	default:
		panic("webhook: Sign with the zero Secret")
	}
}

// SignatureHeader is the webhook-signature value: one entry per secret
// (see Secret.Sign), separated by single spaces. Several secrets are how
// a rotation's grace period works: the receiver accepts the message
// while it knows any one of them. Zero Secrets are skipped.
func SignatureHeader(id string, ts time.Time, body []byte, secrets ...Secret) string {
	t := Timestamp(ts)
	var b strings.Builder
	for _, s := range secrets {
		if s.IsZero() {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s.sign(id, t, body))
	}
	return b.String()
}

// SetHeaders sets webhook-id, webhook-timestamp (integer seconds) and
// webhook-signature (SignatureHeader) on h. Call it once per attempt: a
// retry keeps the id and gets a fresh timestamp and signature.
func SetHeaders(h http.Header, id string, ts time.Time, body []byte, secrets ...Secret) {
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, Timestamp(ts))
	h.Set(HeaderSignature, SignatureHeader(id, ts, body, secrets...))
}
