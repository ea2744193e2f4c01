package store

import "time"

// Delivery statuses.
const (
	// StatusPending is a delivery waiting for its next attempt (or in one).
	StatusPending = "pending"
	// StatusSucceeded is a delivery the endpoint answered with a 2xx.
	StatusSucceeded = "succeeded"
	// StatusFailed is a delivery whose attempts are exhausted, or whose
	// endpoint refused it for good (410 Gone).
	StatusFailed = "failed"
	// StatusPaused is a pending delivery of a disabled endpoint: it is
	// pending again when the endpoint is enabled. (Kept out of the
	// pending index range, it costs claims nothing meanwhile.)
	StatusPaused = "paused"
)

// Endpoint is a URL events are delivered to.
type Endpoint struct {
	ID          string
	URL         string
	Description string
	// EventTypes filters the events delivered: empty for every type; an
	// entry ending in ".*" matches every type with that prefix.
	EventTypes []string
	// Secrets sign the deliveries: every one not yet expired signs each
	// attempt, so a receiver can move to a rotated secret at leisure.
	Secrets []Secret
	// RateLimit is the most deliveries per second (0: no limit).
	RateLimit int
	// Enabled endpoints get new events and their pending attempts.
	Enabled bool
	// DisabledReason says why an endpoint was disabled.
	DisabledReason string
	// FailingSince is when the endpoint's current run of failed attempts
	// began (zero when its last attempt succeeded).
	FailingSince time.Time
	Created      time.Time
	Updated      time.Time
	// Revision is the revision of the endpoint's row as read: every write
	// to it raises it (an UpdateEndpoint, an attempt's completion changing
	// FailingSince or disabling it). UpdateEndpoint writes e only over
	// the revision e.Revision names, so a change made since e was read is
	// never overwritten by e's stale copy of it: the caller reads again
	// and applies its change to what it finds (ErrConflict). Zero writes
	// whatever the row's revision.
	Revision int64
}

// Secret is one signing secret of an endpoint, in its whsec_ form.
type Secret struct {
	Secret string `json:"secret"`
	// Expires is when a rotated-out secret stops signing (zero: current).
	Expires time.Time `json:"expires,omitzero"`
}

// MaxSecrets is the most secrets that sign one attempt: the current one
// and up to MaxSecrets-1 rotated out and still in their grace period. A
// receiver refuses a webhook-signature of too many entries (package
// webhook's Verifier more than MaxSignatureEntries, 32), and each entry
// costs every receiver an HMAC: the API expires the oldest secret when a
// rotation would keep more.
const MaxSecrets = 4

// Active returns the secrets that still sign at now: the last MaxSecrets
// of them, in their order (the newest last), when more are unexpired.
func (e *Endpoint) Active(now time.Time) []string {
	var s []string
	for _, sec := range e.Secrets {
		if sec.Expires.IsZero() || now.Before(sec.Expires) {
			s = append(s, sec.Secret)
		}
	}
	if len(s) > MaxSecrets {
		s = s[len(s)-MaxSecrets:]
	}
	return s
}

// Accepts reports whether the endpoint's filter lets events of type t through.
func (e *Endpoint) Accepts(t string) bool {
	if len(e.EventTypes) == 0 {
		return true
	}
	for _, f := range e.EventTypes {
		if f == t || f == "*" {
			return true
		}
		if len(f) > 2 && f[len(f)-2:] == ".*" && len(t) > len(f)-1 && t[:len(f)-1] == f[:len(f)-1] {
			return true
		}
	}
	return false
}

// Event is one message of the outbox. Payload holds the exact bytes sent
// as every attempt's body.
type Event struct {
	ID             string
	Type           string
	Payload        []byte
	IdempotencyKey string
	Created        time.Time
}

// Delivery is one event on its way to one endpoint.
type Delivery struct {
	ID          string
	EventID     string
	EndpointID  string
	Status      string
	Attempts    int
	NextAttempt time.Time
	// LastCode is the HTTP status of the last attempt (0: none or no answer).
	LastCode int
	Created  time.Time
	Updated  time.Time
}

// Attempt is one HTTP request of a delivery and what came of it.
type Attempt struct {
	ID         string
	DeliveryID string
	EventID    string
	EndpointID string
	Started    time.Time
	Duration   time.Duration
	// StatusCode is the response's status (0: none, see Error).
	StatusCode int
	// Error says why an attempt failed without a response (timeout,
	// refused connection, blocked address). It is stored with each NUL
	// byte and each run of bytes that are not UTF-8 replaced by U+FFFD.
	Error string
	// Response is the start of the response body (capped by the dispatcher).
	Response []byte
	// Outcome is the delivery's status after this attempt.
	Outcome string
}

// Token is an API bearer token; only its SHA-256 is stored.
type Token struct {
	ID      string
	Name    string
	Hash    []byte
	Created time.Time
	Revoked time.Time
}

// ClaimRequest asks for due deliveries to lease.
type ClaimRequest struct {
	// Owner names the dispatcher taking the lease.
	Owner string
	Now   time.Time
	// Lease is how long the claim holds before others may take it back.
	Lease time.Duration
	// Limit is the most deliveries returned.
	Limit int
	// PerEndpoint is the most deliveries returned for one endpoint.
	PerEndpoint int
	// RateLimited is the most returned for one endpoint with a rate
	// limit (0: PerEndpoint): a dispatcher takes its rate-limit slots
	// as its attempts can start, and does not claim a batch of an
	// endpoint waiting for them only to release all but one.
	RateLimited int
	// RateRoom is, by endpoint id, the most returned for that endpoint
	// when it has a rate limit, in place of RateLimited (its free
	// workers, capped by PerEndpoint): with one cap for all, an endpoint
	// with one worker free held every other rate-limited endpoint in
	// the claim to one.
	RateRoom map[string]int
	// Skip lists endpoints to return nothing for (their queues are full).
	Skip []string
}

// Job is a leased delivery with everything needed to attempt it.
type Job struct {
	Delivery Delivery
	Event    Event
	Endpoint Endpoint
	// LeaseUntil is the end of the lease this claim took (the claim's
	// Now + Lease; on PostgreSQL the server's clock + Lease); a
	// Completion of the attempt carries it.
	LeaseUntil time.Time
}

// Completion is the result of one attempt, written in one transaction.
type Completion struct {
	Owner   string
	Attempt Attempt
	// Status and NextAttempt are the delivery's new state.
	Status      string
	NextAttempt time.Time
	// EndpointOK clears the endpoint's FailingSince; otherwise it is set
	// to the attempt's start unless already set.
	EndpointOK bool
	// Disable disables the endpoint with this reason (empty: keep),
	// unless it is disabled already (by its user: their reason stands).
	Disable string
	// DisableRevision, when set, is the endpoint's Revision the attempt
	// was made to (Job.Endpoint.Revision): the endpoint is disabled only
	// while that is still its revision, before this completion's own
	// health write. A user's change since (an enable above all, which a
	// 410 Gone answering a request sent before it must not undo), and
	// any health write of another completion, leave it enabled: the
	// next attempt, made to the endpoint as it is now, decides again.
	// Zero: disabled whatever its revision.
	DisableRevision int64
	// ResentStatus and ResentNextAttempt are the delivery's new state
	// when a Resend was made before the attempt started (LeaseStarted
	// against the Resend's time): the attempt is then the first of the
	// schedule the Resend began, not one more of the old, and is what the
	// Resend asked for (a delivery claimed ahead and resent while queued
	// is attempted once, not again after it). Empty: Status and
	// NextAttempt (the attempt was the first of its schedule).
	ResentStatus      string
	ResentNextAttempt time.Time
	// LeaseStarted is the attempt's start by the clock of its lease
	// (Job.LeaseUntil's: the database server's on PostgreSQL, whose
	// Resend takes its time from it too), no later than the start: a
	// Resend is taken as made before the attempt only if it was by one
	// clock, however skewed the processes' clocks (a Resend during an
	// attempt taken as before it was lost, the attempt already under way
	// standing for the one it asked for). Zero: the attempt is taken as
	// started before any Resend (one during it is followed by another).
	LeaseStarted time.Time
	// Notices are operational events inserted with the completion, each
	// delivered only to NoticeEndpoint; DisableNotice too, but only when
	// the completion disables the endpoint (see Disabled), and
	// ExhaustedNotice only when it leaves the delivery failed (not when a
	// Resend or a Recover gave it a new schedule).
	Notices         []*Event
	DisableNotice   *Event
	ExhaustedNotice *Event
	NoticeEndpoint  string
	// LeaseUntil, when set, is the end of the lease the attempt was
	// made under (Job.LeaseUntil): the completion is recorded only while
	// the delivery holds that very lease, not a later one the same owner
	// took after it expired (whose attempt may be under way).
	LeaseUntil time.Time
	// LeaseLost is set by Store.Complete when Owner no longer held the
	// delivery's lease (or not LeaseUntil's), so nothing was recorded.
	LeaseLost bool
	// Failed is set by Store.Complete when the completion left the
	// delivery failed (for good: not when a Resend or a Recover gave it a
	// new schedule).
	Failed bool
	// Disabled is set by Store.Complete when the completion disabled its
	// endpoint (its Disable was written: not when the endpoint was
	// disabled already, or its DisableRevision stale).
	Disabled bool
	// Resent is set by Store.Complete when a Resend made during the
	// attempt left the delivery pending, due at the resend's time: it is
	// due now, though no claim could take it while the attempt ran.
	Resent bool
}
