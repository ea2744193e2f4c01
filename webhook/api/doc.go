// Package api is the webhook dispatcher's HTTP JSON API under /v1/:
// endpoints (create, list, get, update, delete, secret rotation with a
// grace period, recovery of failed deliveries), events (create with an
// optional idempotency key, list, get, deliveries with their attempts,
// resend) and API tokens. Every route but /v1/openapi.json needs a bearer
// token; tokens are stored as their SHA-256 and can be revoked.
//
// Bad requests get a 4xx with a JSON body {"error": "…"} and change
// nothing: 401 without a valid token, 400 for malformed JSON, unknown
// fields or invalid values (among them any string, in the body, the
// path, the query or the Idempotency-Key header, holding a NUL or bytes
// not UTF-8, which PostgreSQL cannot store), 404 for a missing object, 413 for a body
// over MaxBodyBytes.
//
// A PATCH of an endpoint or a secret rotation reads the endpoint, applies
// its change and writes it in one store transaction: a change made
// meanwhile (the dispatcher disabling the endpoint or recording its
// health, another request) lands before or after it, and is kept. Event
// listings page by
// the last event shown: before (its created_at) and before_id (its id).
package api
