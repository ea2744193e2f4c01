// Package console is the webhook dispatcher's operator console: a few
// server-rendered pages (html/template, plain forms, no JavaScript) served
// at / on the dispatcher's listener, beside the API under /v1/.
//
// It shows the endpoints with their health (enabled or disabled and why,
// failing since when, the success rate of their recent attempts), the
// recent events with their deliveries and attempts (status, response code,
// duration, the start of the response), and has buttons to resend an
// event, to recover an endpoint's failed deliveries in a time range, and
// to disable or enable an endpoint. Every button is a POST answered with a
// redirect to a page (POST-redirect-GET), so reloading never repeats it.
//
// Access takes an API token, like the API. A browser logs in with a form
// that takes the token: the console then sets an HttpOnly, SameSite=Strict
// cookie holding a random session id, mapped in memory to the token's
// hash, which is looked up in the store on every request (a revoked token
// ends its sessions). Every POST made with the cookie must carry the
// session's CSRF token in a hidden field; the login form is protected the
// same way by a short-lived pre-session cookie (double submit). A client
// may instead send the token as "Authorization: Bearer …" on each request,
// which needs no CSRF token, browsers never adding that header on their
// own. Sessions are bounded (MaxSessions, the oldest dropped first) and
// expire (SessionTTL); a restart logs everyone out.
//
// Responses carry a Content-Security-Policy that allows no script at all,
// forbid framing, and are never cached. Every value shown is escaped by
// html/template.
package console
