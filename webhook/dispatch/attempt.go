package dispatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/brokerless/brokerless/webhook"
	"github.com/brokerless/brokerless/webhook/store"
)

// drainLimit is how much of a response body past MaxResponseBody is read
// (and discarded) so the connection can be reused.
const drainLimit = 64 << 10

// attempt makes one attempt of c's delivery and records it.
func (d *Dispatcher) attempt(ctx context.Context, c *claimed) {
	j := c.job
	start := d.cfg.Now()
	o, response, errText := d.send(ctx, j)
	if ctx.Err() != nil && o.StatusCode == 0 {
		// Stopping before an answer: the attempt does not count; release
		// the delivery so a restart (or another dispatcher) claims it at
		// once. An answer that came (a 2xx above all) is recorded: released,
		// it would be delivered again.
		d.release(ctx, []string{j.Delivery.ID})
		return
	}
	end := d.cfg.Now()
	n := j.Delivery.Attempts + 1
	// Delays count from the answer (Retry-After's as RFC 9110 has it).
	rnd := d.cfg.Rand()
	dec := d.cfg.Policy.Decide(end, n, o, j.Endpoint.FailingSince, rnd)
	d.mu.Lock()
	until := c.until // (a claim may have renewed the lease meanwhile)
	leaseEnd := c.at.Add(d.cfg.Lease)
	leaseStarted := until.Add(-d.cfg.Lease).Add(start.Sub(c.got))
	d.mu.Unlock()
	cp := &store.Completion{
		Owner: d.cfg.Owner, LeaseUntil: until, // recorded only under the lease it was attempted under
		LeaseStarted: leaseStarted, // a Resend before it by the same clock was what the attempt was for
		Attempt: store.Attempt{ID: store.NewID("atmpt", start), DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: j.Endpoint.ID,
			Started: start, Duration: end.Sub(start), StatusCode: o.StatusCode, Error: errText, Response: response},
		Status: dec.Status, NextAttempt: dec.NextAttempt, EndpointOK: dec.EndpointOK, Disable: dec.Disable,
		// Disabled only if the endpoint is still as the attempt was made
		// to it: not when its user enabled it again (or changed it)
		// since, an answer to a request sent before undoing it.
		DisableRevision: j.Endpoint.Revision,
	}
	exhausted := dec.Exhausted
	if n > 1 {
		// Should a Resend have come before the attempt started, it was
		// the first of the Resend's schedule (the store tells).
		first := d.cfg.Policy.Decide(end, 1, o, j.Endpoint.FailingSince, rnd)
		cp.ResentStatus, cp.ResentNextAttempt = first.Status, first.NextAttempt
		exhausted = exhausted || first.Exhausted
	}
	notify := d.cfg.NoticeEndpoint != "" && j.Endpoint.ID != d.cfg.NoticeEndpoint
	if dec.Disable != "" && notify {
		// (Sent only if the completion disables it: see recorded.)
		ev := endpointDisabled{EndpointID: j.Endpoint.ID, URL: j.Endpoint.DisplayURL(), Reason: dec.Disable}
		if !j.Endpoint.FailingSince.IsZero() {
			fs := j.Endpoint.FailingSince.UTC()
			ev.FailingSince = &fs
		}
		cp.DisableNotice = noticeEvent(NoticeEndpointDisabled, ev, end)
	}
	if exhausted && notify {
		// (Sent only if the completion leaves the delivery failed, not
		// when a Resend or a Recover gave it a new schedule: see recorded.)
		cp.ExhaustedNotice = noticeEvent(NoticeAttemptExhausted, attemptExhausted{EventID: j.Event.ID, EventType: j.Event.Type,
			EndpointID: j.Endpoint.ID, Attempts: n, LastCode: o.StatusCode, LastError: errText}, end)
	}
	if len(cp.Notices) > 0 || cp.DisableNotice != nil || cp.ExhaustedNotice != nil {
		cp.NoticeEndpoint = d.cfg.NoticeEndpoint
	}
	if cp.Disable != "" {
		// Until it is recorded, the endpoint's other deliveries held are
		// not attempted (endpointState.disabling; recorded ends it).
		d.mu.Lock()
		if ep := d.endpoints[j.Endpoint.ID]; ep != nil {
			ep.disabling++
		}
		d.mu.Unlock()
	}
	d.stats.attempts.Add(1)
	if dec.Status == store.StatusSucceeded {
		d.stats.succeeded.Add(1)
	} else {
		d.stats.failed.Add(1)
	}
	d.commits.submit(ctx, toWrite{c: cp, until: leaseEnd, exhausted: exhausted})
}

// send POSTs the event to the endpoint, signed with its active secrets.
// It returns the outcome, the start of the response body, and why there
// was no response (empty when there was one).
func (d *Dispatcher) send(ctx context.Context, j *store.Job) (Outcome, []byte, string) {
	// Timeout bounds the attempt, response body included, whatever the
	// Client (one given in Config may have no Timeout of its own).
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	// The request parses the URL (once: it used to be parsed here too).
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.Endpoint.URL, bytes.NewReader(j.Event.Payload))
	if err != nil {
		return Outcome{}, nil, "bad URL: " + redactURLError(err, &j.Endpoint)
	}
	if err := d.cfg.Addresses.CheckURL(req.URL); err != nil {
		return Outcome{}, nil, err.Error()
	}
	now := d.cfg.Now()
	var secrets []webhook.Secret
	for _, s := range j.Endpoint.Active(now) {
		sec, err := webhook.ParseSecret(s)
		if err != nil {
			return Outcome{}, nil, fmt.Sprintf("endpoint secret: %v", err)
		}
		secrets = append(secrets, sec)
	}
	if len(secrets) == 0 {
		return Outcome{}, nil, "the endpoint has no active secret"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "brokerless-webhook")
	webhook.SetHeaders(req.Header, j.Event.ID, now, j.Event.Payload, secrets...)
	resp, err := d.cfg.Client.Do(req)
	if err != nil {
		return Outcome{}, nil, redactURLError(err, &j.Endpoint)
	}
	defer resp.Body.Close()
	var body []byte
	if resp.ContentLength != 0 { // (most answers to a webhook are empty)
		body, _ = io.ReadAll(io.LimitReader(resp.Body, int64(d.cfg.MaxResponseBody)))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
	}
	return Outcome{StatusCode: resp.StatusCode, RetryAfter: ParseRetryAfter(resp.Header.Get("Retry-After"), d.cfg.Now())}, body, ""
}

// redactURLError is err's text with the URL it names shown as
// e.DisplayURL(): the attempt's error is kept, shown by the API and the
// console, and net/http's own redaction keeps the user name.
func redactURLError(err error, e *store.Endpoint) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = e.DisplayURL()
	}
	return err.Error()
}
