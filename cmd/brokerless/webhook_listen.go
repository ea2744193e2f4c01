package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/brokerless/brokerless/webhook"
)

var webhookListenCmd = command{
	name:     "webhook listen",
	summary:  "receive webhooks: verify each signature and print what arrives",
	synopsis: "--secret whsec_… [--listen ADDR] [flags]",
	about: `
Receives webhooks on --listen, for developing against a sender (our
dispatcher, Svix, any Standard Webhooks sender). Every POST, on any path,
is checked as package webhook's Receiver does: body at most --max-body
(else 413), webhook-id, webhook-timestamp and webhook-signature present
(else 400), timestamp within --tolerance of this machine's clock and one
signature entry matching one --secret or --public-key (else 401); a
webhook-id already answered with success is a duplicate (200, not printed
as a delivery). Handled ids are remembered (--dedup-size of them) until
a replay of their request would fail the timestamp check; when all are
still replayable, a new id gets 503 rather than forget one. A verified delivery is printed on stdout, one line:

  TIME STATUS id=ID age=AGE BYTES BODY

and answered --status (204). To see how a sender retries, --fail-first N
answers --fail-status (503) to the first N verified deliveries; a failed
delivery's id is not remembered, so its retry is printed again. Refused
requests are printed too, with their status and reason. The address it
listens on goes to stderr; it stops on SIGINT or SIGTERM and prints its
counts.`,
	examples: `
# Verify with the endpoint's secret; print each delivery.
brokerless webhook listen --listen 127.0.0.1:9000 --secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw

# During a secret rotation either secret verifies.
brokerless webhook listen --secret whsec_OLD… --secret whsec_NEW…

# A receiver that fails its first 3 deliveries with 500, then recovers.
brokerless webhook listen --secret whsec_… --fail-first 3 --fail-status 500

# A busy sender: remember up to a million webhook-ids (size it above the
# deliveries in twice --tolerance).
brokerless webhook listen --secret whsec_… --dedup-size 1000000

# Asymmetric (v1a) signatures, with the sender's public key.
brokerless webhook listen --public-key whpk_…`,
	run: runWebhookListen,
}

type webhookListenOptions struct {
	listen     string
	secrets    []string
	publicKeys []string
	tolerance  time.Duration
	maxBody    int64
	dedupSize  int
	status     int
	failFirst  int
	failStatus int
	printMax   int
}

func runWebhookListen(ctx context.Context, inv *invocation) error {
	var o webhookListenOptions
	fs := inv.flags()
	fs.StringVar(&o.listen, "listen", "127.0.0.1:9000", "address to listen on, host:port (port 0 picks a free one)")
	fs.StringArrayVar(&o.secrets, "secret", nil, "whsec_… secret (or whsk_… key) to verify with; repeat it during a rotation")
	fs.StringArrayVar(&o.publicKeys, "public-key", nil, "whpk_… ed25519 public key to verify v1a signatures with; repeatable")
	fs.DurationVar(&o.tolerance, "tolerance", webhook.DefaultTolerance, "how far webhook-timestamp may be from this machine's clock, either way")
	fs.Int64Var(&o.maxBody, "max-body", webhook.DefaultMaxBodyBytes, "largest body accepted, in bytes (a larger one gets 413)")
	fs.IntVar(&o.dedupSize, "dedup-size", webhook.DefaultDedupSize, "webhook-ids remembered to answer replays and retries as duplicates (when all are still replayable, a new id gets 503)")
	fs.IntVar(&o.status, "status", http.StatusNoContent, "status answered to a verified delivery, in [200, 599]")
	fs.IntVar(&o.failFirst, "fail-first", 0, "answer --fail-status to the first N verified deliveries")
	fs.IntVar(&o.failStatus, "fail-status", http.StatusServiceUnavailable, "status of the --fail-first answers, in [200, 599]")
	fs.IntVar(&o.printMax, "print-max", 2048, "print at most this many bytes of each body (0: none)")
	if err := inv.parse(fs); err != nil {
		return err
	}
	v, err := o.verifier()
	if err != nil {
		return err
	}
	l := &webhookListener{out: inv.out, status: o.status, failStatus: o.failStatus, printMax: o.printMax}
	l.failLeft.Store(int64(o.failFirst))
	rc, err := webhook.NewReceiver(webhook.ReceiverConfig{Verifier: v, MaxBodyBytes: o.maxBody, DedupSize: o.dedupSize, Logger: inv.log}, http.HandlerFunc(l.deliver))
	if err != nil {
		return configError(err, map[string]string{"MaxBodyBytes": "max-body", "Tolerance": "tolerance"})
	}
	l.rc = rc
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		var se interface{ Unwrap() error }
		if errors.As(err, &se) {
			err = se.Unwrap()
		}
		return fmt.Errorf("--listen %s: %w", o.listen, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(l.serve), ReadHeaderTimeout: 10 * time.Second, ErrorLog: nil}
	fmt.Fprintf(inv.err, "webhook listen: listening on http://%s/ (verifying with %d secret(s), %d public key(s), tolerance %s)\n",
		ln.Addr(), len(o.secrets), len(o.publicKeys), o.tolerance)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-served:
		return err
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(shut)
	<-served
	s := rc.Stats()
	fmt.Fprintf(inv.err, "webhook listen: %d delivered, %d failed on purpose, %d duplicate(s), %d refused, %d busy (503: no room to remember another id)\n",
		s.Accepted, s.Failed, s.Duplicates+s.InFlight, s.BadRequest+s.Unauthorized+s.TooLarge+s.BadMethod, s.Busy)
	return nil
}

// verifier checks the flags and builds the Verifier. A secret's value
// never appears in an error.
func (o *webhookListenOptions) verifier() (*webhook.Verifier, error) {
	if _, port, err := net.SplitHostPort(o.listen); err != nil {
		return nil, usagef("--listen %s: must be host:port, e.g. 127.0.0.1:9000 or :9000", o.listen)
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return nil, usagef("--listen %s: must have a port in [0, 65535]", o.listen)
	}
	if len(o.secrets) == 0 && len(o.publicKeys) == 0 {
		return nil, usagef("--secret or --public-key is required")
	}
	v := &webhook.Verifier{Tolerance: o.tolerance}
	for i, s := range o.secrets {
		sec, err := webhook.ParseSecret(s)
		if err != nil {
			return nil, usagef("--secret (#%d): %v", i+1, err)
		}
		v.Secrets = append(v.Secrets, sec)
	}
	for _, s := range o.publicKeys {
		k, err := webhook.ParsePublicKey(s)
		if err != nil {
			return nil, usagef("--public-key %s: %v", s, err)
		}
		v.PublicKeys = append(v.PublicKeys, k)
	}
	switch {
	case o.tolerance <= 0:
		return nil, usagef("--tolerance %s: must be > 0", o.tolerance)
	case o.maxBody <= 0:
		return nil, usagef("--max-body %d: must be > 0", o.maxBody)
	case o.dedupSize <= 0:
		return nil, usagef("--dedup-size %d: must be > 0", o.dedupSize)
	case o.status < 200 || o.status > 599:
		return nil, usagef("--status %d: must be in [200, 599]", o.status)
	case o.failStatus < 200 || o.failStatus > 599:
		return nil, usagef("--fail-status %d: must be in [200, 599]", o.failStatus)
	case o.failFirst < 0:
		return nil, usagef("--fail-first %d: must be >= 0", o.failFirst)
	case o.printMax < 0:
		return nil, usagef("--print-max %d: must be >= 0", o.printMax)
	}
	return v, nil
}

// webhookListener prints what arrives and answers it.
type webhookListener struct {
	rc         *webhook.Receiver
	status     int
	failStatus int
	printMax   int
	failLeft   atomic.Int64
	mu         sync.Mutex // serializes lines on out
	out        io.Writer
}

type handedOnKey struct{}

// serve runs the Receiver and prints a line for each request it refused
// or answered as a duplicate (deliver prints the others).
func (l *webhookListener) serve(w http.ResponseWriter, r *http.Request) {
	handed := new(bool)
	cw := &captureWriter{ResponseWriter: w}
	l.rc.ServeHTTP(cw, r.WithContext(context.WithValue(r.Context(), handedOnKey{}, handed)))
	if *handed {
		return
	}
	what := "refused"
	if cw.code < 300 {
		what = "duplicate"
	}
	l.printf("%s %d %s id=%s from %s: %s\n", time.Now().UTC().Format(time.RFC3339), cw.code, what,
		oneLine(r.Header.Get(webhook.HeaderID), 100), r.RemoteAddr, strings.TrimSpace(cw.text.String()))
}

// deliver answers a verified delivery and prints it.
func (l *webhookListener) deliver(w http.ResponseWriter, r *http.Request) {
	*r.Context().Value(handedOnKey{}).(*bool) = true
	d, _ := webhook.DeliveryFrom(r)
	status := l.status
	if l.failLeft.Add(-1) >= 0 {
		status = l.failStatus
	}
	w.WriteHeader(status)
	now := time.Now()
	body := ""
	if l.printMax > 0 {
		body = " " + oneLine(string(d.Body), l.printMax)
	}
	l.printf("%s %d id=%s age=%ds %dB%s\n", now.UTC().Format(time.RFC3339), status, oneLine(d.ID, 100),
		now.Unix()-d.Timestamp.Unix(), len(d.Body), body)
}

func (l *webhookListener) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.out, format, args...)
}

// oneLine is s cut to max bytes, as it is when it is valid UTF-8 with
// no control characters, else quoted, so one delivery stays one line.
func oneLine(s string, max int) string {
	more := 0
	if len(s) > max {
		more = len(s) - max
		s = s[:max]
		// Do not cut a character in two.
		for i := 0; i < utf8.UTFMax-1 && len(s) > 0 && !utf8.ValidString(s); i++ {
			s, more = s[:len(s)-1], more+1
		}
	}
	if !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		s = strconv.Quote(s)
	}
	if more > 0 {
		s += fmt.Sprintf("… (%d more bytes)", more)
	}
	return s
}

// captureWriter keeps the status and the text the Receiver answers with.
type captureWriter struct {
	http.ResponseWriter
	code int
	text strings.Builder
}

func (c *captureWriter) WriteHeader(code int) {
	if c.code == 0 {
		c.code = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *captureWriter) Write(b []byte) (int, error) {
	if c.code == 0 {
		c.code = http.StatusOK
	}
	if c.text.Len() < 512 {
		c.text.Write(b[:min(len(b), 512)])
	}
	return c.ResponseWriter.Write(b)
}

func (c *captureWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
