package dispatch

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// DefaultSchedule is when the attempts of a delivery are made, each
// after the previous one failed: immediately, then 5 s, 5 min, 30 min,
// 2 h, 5 h, 10 h and 10 h later (eight attempts).
var DefaultSchedule = []time.Duration{0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// Defaults of Policy.
const (
	DefaultJitter        = 0.2
	DefaultDisableAfter  = 5 * 24 * time.Hour
	DefaultMaxRetryAfter = 24 * time.Hour
)

// Policy decides what follows an attempt. It does no I/O.
type Policy struct {
	// Schedule[i] is the delay before attempt i+1 (Schedule[0], the
	// first attempt's, is not used: a new event is due at once); its
	// length is the number of attempts.
	Schedule []time.Duration
	// Jitter spreads each delay uniformly over ±Jitter of itself.
	Jitter float64
	// DisableAfter disables an endpoint whose attempts have all failed
	// for this long (0: never).
	DisableAfter time.Duration
	// MaxRetryAfter caps the delay a Retry-After header may ask for.
	MaxRetryAfter time.Duration
}

// Outcome is what an attempt got.
type Outcome struct {
	// StatusCode is the response's status; 0 when there was none
	// (timeout, refused connection, blocked address).
	StatusCode int
	// RetryAfter is the delay asked for by a Retry-After header (0: none).
	RetryAfter time.Duration
}

// Decision is what follows an attempt.
type Decision struct {
	// Status is the delivery's new status.
	Status string
	// NextAttempt is when a pending delivery is tried again.
	NextAttempt time.Time
	// EndpointOK is true after a success: the endpoint is healthy.
	EndpointOK bool
	// Disable, when not empty, disables the endpoint for this reason.
	Disable string
	// Exhausted is true when the delivery failed for good because its
	// attempts ran out.
	Exhausted bool
}

// Decide returns what follows attempt number attempt (1 for the first)
// that ended at now (its answer came, or its timeout fired) with outcome o, on an endpoint failing since failingSince
// (zero if its last attempt succeeded); rnd is uniform in [0, 1).
func (p *Policy) Decide(now time.Time, attempt int, o Outcome, failingSince time.Time, rnd float64) Decision {
	switch {
	case o.StatusCode >= 200 && o.StatusCode < 300:
		return Decision{Status: store.StatusSucceeded, EndpointOK: true}
	case o.StatusCode == http.StatusGone:
		return Decision{Status: store.StatusFailed, Disable: "the endpoint answered 410 Gone"}
	}
	var d Decision
	if failingSince.IsZero() {
		failingSince = now
	}
	if p.DisableAfter > 0 && now.Sub(failingSince) >= p.DisableAfter {
		d.Disable = fmt.Sprintf("every attempt failed since %s (more than %v)", failingSince.UTC().Format(time.RFC3339), p.DisableAfter)
	}
	if attempt >= len(p.Schedule) {
		d.Status, d.Exhausted = store.StatusFailed, true
		return d
	}
	delay := p.Schedule[attempt]
	delay += time.Duration(float64(delay) * p.Jitter * (2*rnd - 1))
	if ra := min(o.RetryAfter, p.MaxRetryAfter); ra > delay {
		delay = ra
	}
	d.Status, d.NextAttempt = store.StatusPending, now.Add(delay)
	return d
}

// ParseRetryAfter reads a Retry-After header value: delay-seconds or an
// HTTP date (RFC 9110 §10.2.3). It returns 0 for an absent, malformed or
// past value.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, int64(365*24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
