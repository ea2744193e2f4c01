package dispatch

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func defaultPolicy() *Policy {
	return &Policy{Schedule: DefaultSchedule, Jitter: DefaultJitter, DisableAfter: DefaultDisableAfter, MaxRetryAfter: DefaultMaxRetryAfter}
}

// TestPolicySchedule: with no jitter (rnd 0.5) each failed attempt is
// retried after the schedule's next delay, and the eighth failure
// exhausts the delivery.
func TestPolicySchedule(t *testing.T) {
	p := defaultPolicy()
	p.DisableAfter = 0
	want := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}
	now := t0
	for attempt := 1; attempt <= 8; attempt++ {
		d := p.Decide(now, attempt, Outcome{StatusCode: 500}, t0, 0.5)
		if attempt == 8 {
			if d.Status != store.StatusFailed || !d.Exhausted {
				t.Fatalf("attempt 8: %+v, want exhausted", d)
			}
			break
		}
		if d.Status != store.StatusPending || d.NextAttempt.Sub(now) != want[attempt-1] {
			t.Fatalf("after attempt %d: %+v, want a retry in %v", attempt, d, want[attempt-1])
		}
		now = d.NextAttempt
	}
}

// TestPolicyJitter: the delay spans ±20% of the schedule's, linearly in rnd.
func TestPolicyJitter(t *testing.T) {
	p := defaultPolicy()
	for _, tc := range []struct {
		rnd  float64
		want time.Duration
	}{{0, 24 * time.Minute}, {0.25, 27 * time.Minute}, {0.5, 30 * time.Minute}, {0.75, 33 * time.Minute}, {0.999999, 36 * time.Minute}} {
		d := p.Decide(t0, 3, Outcome{StatusCode: 503}, time.Time{}, tc.rnd)
		if got := d.NextAttempt.Sub(t0); got.Round(time.Second) != tc.want {
			t.Errorf("rnd %v: delay %v, want %v", tc.rnd, got, tc.want)
		}
	}
}

// TestPolicyStatuses: only 2xx succeeds; 3xx, 4xx and no response are
// failures retried; 410 fails the delivery and disables the endpoint.
func TestPolicyStatuses(t *testing.T) {
	p := defaultPolicy()
	for _, tc := range []struct {
		code    int
		status  string
		disable bool
	}{
		{200, store.StatusSucceeded, false}, {204, store.StatusSucceeded, false}, {299, store.StatusSucceeded, false},
		{0, store.StatusPending, false}, {199, store.StatusPending, false}, {301, store.StatusPending, false}, {302, store.StatusPending, false},
		{304, store.StatusPending, false}, {400, store.StatusPending, false}, {404, store.StatusPending, false}, {429, store.StatusPending, false},
		{500, store.StatusPending, false}, {410, store.StatusFailed, true},
	} {
		d := p.Decide(t0, 1, Outcome{StatusCode: tc.code}, time.Time{}, 0.5)
		if d.Status != tc.status || (d.Disable != "") != tc.disable || d.EndpointOK != (tc.status == store.StatusSucceeded) {
			t.Errorf("status %d: %+v, want %s (disable %v)", tc.code, d, tc.status, tc.disable)
		}
	}
}

// TestPolicyRetryAfter: a Retry-After later than the schedule's delay
// wins (capped by MaxRetryAfter); an earlier one does not hasten the retry.
func TestPolicyRetryAfter(t *testing.T) {
	p := defaultPolicy()
	for _, tc := range []struct {
		attempt int
		ra      time.Duration
		want    time.Duration
	}{
		{1, time.Minute, time.Minute},             // schedule says 5 s
		{2, time.Minute, 5 * time.Minute},         // schedule says 5 min
		{1, 48 * time.Hour, DefaultMaxRetryAfter}, // capped
		{1, 0, 5 * time.Second},                   // none
	} {
		d := p.Decide(t0, tc.attempt, Outcome{StatusCode: 429, RetryAfter: tc.ra}, time.Time{}, 0.5)
		if got := d.NextAttempt.Sub(t0); got != tc.want {
			t.Errorf("attempt %d Retry-After %v: delay %v, want %v", tc.attempt, tc.ra, got, tc.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{"120", 2 * time.Minute}, {" 7 ", 7 * time.Second}, {"0", 0}, {"-5", 0}, {"", 0}, {"soon", 0},
		{t0.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{t0.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"99999999999999", 365 * 24 * time.Hour},
	} {
		if got := ParseRetryAfter(tc.v, t0); got != tc.want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

// TestPolicyAutoDisable: an endpoint failing for DisableAfter is
// disabled; the delivery itself keeps its schedule.
func TestPolicyAutoDisable(t *testing.T) {
	p := defaultPolicy()
	p.DisableAfter = 24 * time.Hour
	if d := p.Decide(t0, 2, Outcome{StatusCode: 500}, t0.Add(-23*time.Hour), 0.5); d.Disable != "" {
		t.Fatalf("disabled after 23 h: %+v", d)
	}
	d := p.Decide(t0, 2, Outcome{StatusCode: 500}, t0.Add(-24*time.Hour), 0.5)
	if !strings.Contains(d.Disable, "failed since") || d.Status != store.StatusPending {
		t.Fatalf("after 24 h failing: %+v", d)
	}
	if d := p.Decide(t0, 2, Outcome{StatusCode: 200}, t0.Add(-48*time.Hour), 0.5); d.Disable != "" || !d.EndpointOK {
		t.Fatalf("a success on a long-failing endpoint: %+v", d)
	}
	p.DisableAfter = 0
	if d := p.Decide(t0, 2, Outcome{StatusCode: 500}, t0.Add(-1000*time.Hour), 0.5); d.Disable != "" {
		t.Fatalf("DisableAfter 0 disabled: %+v", d)
	}
}
