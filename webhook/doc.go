// Package webhook signs and verifies webhooks as the Standard Webhooks
// specification (v1) defines them, receives them safely, and keeps a
// dispatcher from being used to reach addresses it must not (SSRF).
//
// # Signing
//
// A message has an id (unchanged across retries), a timestamp (integer
// seconds, fresh on every attempt) and a body. The signed content is
// id + "." + timestamp + "." + body. A Secret signs it:
//
//	whsec_<base64 of 24–64 bytes>   HMAC-SHA256   entry "v1,<base64>"
//	whsk_<base64 ed25519 seed>      ed25519       entry "v1a,<base64>"
//
// As the official libraries do, ParseSecret also takes a symmetric
// secret's bare base64, without whsec_.
//
// SetHeaders writes webhook-id, webhook-timestamp and webhook-signature;
// with several secrets webhook-signature carries one entry per secret,
// separated by spaces, so a receiver that knows either the old or the
// new secret accepts the message while a secret is rotated.
//
// # Verifying
//
// A Verifier checks the three headers: the timestamp within ±5 minutes
// of its clock (Tolerance), and any one signature entry matching any one
// of its secrets or public keys (whpk_…), compared in constant time;
// entries of unknown versions are ignored. Errors are sentinels
// (ErrMissingHeaders, ErrMalformedHeaders, ErrTimestampTooOld,
// ErrTimestampTooNew, ErrNoMatchingSignature) for errors.Is.
//
// # Receiving
//
// A Receiver is an http.Handler that verifies each request with a
// Verifier and hands a webhook-id to the next handler only once: an id
// handled with success is remembered (DedupTTL, 24h), so the sender's
// retries and any replay of a captured request are answered as
// duplicates. The cache is bounded (DedupSize) but never forgets a
// handled id while a request seen with it still passes the timestamp
// check (its webhook-timestamp + Tolerance is not past): when it is full
// of such ids, or of ids being handled, a new id is refused with 503 and
// Retry-After, and the sender retries later. DedupTTL may not be shorter
// than the Tolerance.
//
// # SSRF
//
// An AddressPolicy refuses connections to loopback, private, link-local,
// CGNAT, multicast, reserved, benchmarking and documentation ranges, and
// to IPv6 forms that carry such an IPv4 address (IPv4-mapped, NAT64,
// 6to4), with an explicit allowlist. Its Control runs in the dialer after
// DNS resolution, so rebinding does not help; its Client never follows
// redirects and ignores proxy settings from the environment.
package webhook
