package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of ReceiverConfig.
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultDedupSize    = 10_000
	DefaultDedupTTL     = 24 * time.Hour
)

// ReceiverConfig configures a Receiver. Only Verifier is required.
type ReceiverConfig struct {
	// Verifier checks each request's headers and body.
	Verifier *Verifier
	// MaxBodyBytes caps the body read; a larger one gets 413. Default
	// DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int64
	// DedupSize bounds how many webhook-ids are remembered, being
	// handled or handled. Past it, a handled id is evicted to make room
	// only once a replay of it would be refused for its timestamp (its
	// webhook-timestamp + the Verifier's Tolerance is past), the earliest
	// such first (counted in ReceiverStats.Evicted). An id being handled
	// is never evicted. With no id that can be, a new id is refused with
	// 503 (ReceiverStats.Busy): size it above the webhooks handled in
	// twice the Tolerance (10 minutes by default). Default
	// DefaultDedupSize.
	DedupSize int
	// DedupTTL is how long a successfully handled webhook-id is
	// remembered, so the sender's retries are answered as duplicates;
	// an id whose webhook-timestamp + Tolerance is later is kept until
	// then. Senders retry for hours (Svix: about a day), so the default
	// is DefaultDedupTTL (24h), or the Verifier's Tolerance if that is
	// longer. It may not be shorter than the Tolerance.
	DedupTTL time.Duration
	// Now is the clock of the dedup cache; nil means the Verifier's Now,
	// or time.Now. It also refuses (401) a request whose timestamp went
	// out of Tolerance between its verification and its dedup lookup, so
	// it should be the Verifier's clock, and it must not go back: a
	// handled id is forgotten by it.
	Now func() time.Time
	// Logger gets one line per refused request (debug level); nil
	// discards.
	Logger *slog.Logger
}

func (c *ReceiverConfig) validate() error {
	switch {
	case c.Verifier == nil:
		return badConfig("Verifier", nil, "required")
	case c.MaxBodyBytes < 0:
		return badConfig("MaxBodyBytes", c.MaxBodyBytes, "must be >= 0 (0 means 1 MiB)")
	case c.DedupSize < 0:
		return badConfig("DedupSize", c.DedupSize, "must be >= 0 (0 means 10000)")
	case c.DedupTTL < 0:
		return badConfig("DedupTTL", c.DedupTTL, "must be >= 0 (0 means 24h, or the Verifier's Tolerance if longer)")
	}
	if err := c.Verifier.validate(); err != nil {
		return err
	}
	if tol := tolerance(c.Verifier); c.DedupTTL != 0 && c.DedupTTL < tol {
		return badConfig("DedupTTL", c.DedupTTL, fmt.Sprintf("must be >= the Verifier's Tolerance %s, or a replay of a handled webhook is handled again once its id expires", tol))
	}
	return nil
}

// tolerance is v's Tolerance, the default for zero.
func tolerance(v *Verifier) time.Duration {
	if v.Tolerance == 0 {
		return DefaultTolerance
	}
	return v.Tolerance
}

// Receiver is an http.Handler for a webhook endpoint. It accepts only
// POST, reads the body up to a cap, verifies it with its Verifier, drops
// a webhook-id it has already handled, and hands the rest to the next
// handler with the body in place (and DeliveryFrom the request).
//
// Its answers, each with a one-line text/plain reason:
//
//	405 not POST
//	413 body over MaxBodyBytes
//	400 ErrMissingHeaders, ErrMalformedHeaders
//	401 ErrTimestampTooOld, ErrTimestampTooNew, ErrNoMatchingSignature
//	200 a webhook-id already handled successfully (next is not called)
//	409 a webhook-id being handled by another request right now (the
//	    sender retries later; Retry-After: 1)
//	503 a new webhook-id while the DedupSize ids remembered are all
//	    being handled or handled with a timestamp still within
//	    Tolerance (the sender retries later; Retry-After: the seconds
//	    until one of them can be forgotten)
//
// An id is remembered only once next answers 2xx: when next fails, the
// sender's retry (same webhook-id) is handed on again. A handled id is
// remembered at least as long as a request seen with it passes the
// timestamp check, so a captured request replayed within Tolerance is
// answered as a duplicate, never handed on twice, however many other ids
// arrive meanwhile: a full cache refuses new ids (503) rather than forget
// one too early.
type Receiver struct {
	cfg  ReceiverConfig
	next http.Handler
	log  *slog.Logger

	mu    sync.Mutex
	seen  *dedup
	stats struct {
		accepted, duplicates, inFlight, busy, failed, badRequest, unauthorized, tooLarge, badMethod atomic.Uint64
	}
}

// ReceiverStats counts what a Receiver did with requests.
type ReceiverStats struct {
	Accepted     uint64 // verified, new, handed on
	Failed       uint64 // handed on, next answered other than 2xx (id forgotten)
	Duplicates   uint64 // verified, already handled: 200, next not called
	InFlight     uint64 // verified, same id being handled: 409
	BadRequest   uint64 // 400: missing or malformed headers
	Unauthorized uint64 // 401: timestamp out of tolerance or no matching signature
	TooLarge     uint64 // 413
	BadMethod    uint64 // 405
	Busy         uint64 // verified, every remembered id in flight or still within Tolerance, no room for another: 503
	Evicted      uint64 // handled ids, past their timestamp + Tolerance, dropped before DedupTTL because the cache was full
	Remembered   int    // ids in the dedup cache now
}

// NewReceiver makes a Receiver in front of next. A bad cfg is a
// *ConfigError.
func NewReceiver(cfg ReceiverConfig, next http.Handler) (*Receiver, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.DedupSize == 0 {
		cfg.DedupSize = DefaultDedupSize
	}
	if cfg.DedupTTL == 0 {
		cfg.DedupTTL = max(DefaultDedupTTL, tolerance(cfg.Verifier))
	}
	if cfg.Now == nil {
		cfg.Now = cfg.Verifier.Now
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Receiver{cfg: cfg, next: next, log: log, seen: newDedup(cfg.DedupSize, cfg.DedupTTL)}, nil
}

// Delivery is a verified webhook, as the Receiver hands it on.
type Delivery struct {
	ID        string
	Timestamp time.Time
	Body      []byte
}

type deliveryKey struct{}

// DeliveryFrom returns the verified delivery of a request a Receiver
// handed on.
func DeliveryFrom(r *http.Request) (Delivery, bool) {
	d, ok := r.Context().Value(deliveryKey{}).(Delivery)
	return d, ok
}

// Stats returns the Receiver's counters.
func (rc *Receiver) Stats() ReceiverStats {
	rc.mu.Lock()
	evicted, remembered := rc.seen.evicted, rc.seen.len()
	rc.mu.Unlock()
	return ReceiverStats{
		Accepted:     rc.stats.accepted.Load(),
		Failed:       rc.stats.failed.Load(),
		Duplicates:   rc.stats.duplicates.Load(),
		InFlight:     rc.stats.inFlight.Load(),
		Busy:         rc.stats.busy.Load(),
		BadRequest:   rc.stats.badRequest.Load(),
		Unauthorized: rc.stats.unauthorized.Load(),
		TooLarge:     rc.stats.tooLarge.Load(),
		BadMethod:    rc.stats.badMethod.Load(),
		Evicted:      evicted,
		Remembered:   remembered,
	}
}

// StatusFor is the HTTP status a Receiver answers for a Verify error.
func StatusFor(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, ErrMissingHeaders), errors.Is(err, ErrMalformedHeaders):
		return http.StatusBadRequest
	case errors.Is(err, ErrTimestampTooOld), errors.Is(err, ErrTimestampTooNew), errors.Is(err, ErrNoMatchingSignature):
		return http.StatusUnauthorized
	default:
		return http.StatusInternalServerError
	}
}

func (rc *Receiver) refuse(w http.ResponseWriter, r *http.Request, code int, reason string) {
	rc.log.Debug("webhook refused", "status", code, "reason", reason, "remote", r.RemoteAddr, "id", r.Header.Get(HeaderID))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	io.WriteString(w, reason+"\n")
}

func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		rc.stats.badMethod.Add(1)
		w.Header().Set("Allow", http.MethodPost)
		rc.refuse(w, r, http.StatusMethodNotAllowed, "webhook: POST only")
		return
	}
	// Refused before the body is read: a request that cannot verify
	// costs no more than its headers.
	if r.Header.Get(HeaderID) == "" || r.Header.Get(HeaderTimestamp) == "" || r.Header.Get(HeaderSignature) == "" {
		rc.stats.badRequest.Add(1)
		rc.refuse(w, r, http.StatusBadRequest, ErrMissingHeaders.Error())
		return
	}
	body, err := readBody(w, r, rc.cfg.MaxBodyBytes)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			rc.stats.tooLarge.Add(1)
			rc.refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("webhook: body over %d bytes", rc.cfg.MaxBodyBytes))
			return
		}
		rc.stats.badRequest.Add(1)
		rc.refuse(w, r, http.StatusBadRequest, "webhook: reading body: "+err.Error())
		return
	}
	if err := rc.cfg.Verifier.Verify(r.Header, body); err != nil {
		code := StatusFor(err)
		switch code {
		case http.StatusBadRequest:
			rc.stats.badRequest.Add(1)
		case http.StatusUnauthorized:
			rc.stats.unauthorized.Add(1)
		}
		rc.refuse(w, r, code, err.Error())
		return
	}
	id := r.Header.Get(HeaderID)
	ts, _ := strconv.ParseInt(r.Header.Get(HeaderTimestamp), 10, 64)
	at := time.Unix(ts, 0)
	tol := tolerance(rc.cfg.Verifier)
	rc.mu.Lock()
	// now is read under the lock, so the dedup cache sees it in order.
	now := rc.cfg.Now()
	s := rc.seen.begin(id, at.Add(tol), now)
	retry := int64(1)
	if s == seenFull {
		if room, ok := rc.seen.roomAfter(); ok {
			// Whole seconds until now is past room, when a done id can go.
			retry = int64(room.Sub(now)/time.Second) + 1
		}
	}
	rc.mu.Unlock()
	switch s {
	case seenStale:
		rc.stats.unauthorized.Add(1)
		rc.refuse(w, r, http.StatusUnauthorized, fmt.Sprintf("%v: %d is %s before now, tolerance %s (by the Receiver's clock, after verification)",
			ErrTimestampTooOld, ts, now.Sub(at).Truncate(time.Second), tol))
		return
	case seenDone:
		rc.stats.duplicates.Add(1)
		rc.refuse(w, r, http.StatusOK, "webhook: duplicate webhook-id, already handled")
		return
	case seenInFlight:
		rc.stats.inFlight.Add(1)
		w.Header().Set("Retry-After", "1")
		rc.refuse(w, r, http.StatusConflict, "webhook: webhook-id being handled by another request")
		return
	case seenFull:
		rc.stats.busy.Add(1)
		w.Header().Set("Retry-After", strconv.FormatInt(retry, 10))
		rc.refuse(w, r, http.StatusServiceUnavailable, fmt.Sprintf(
			"webhook: no room to remember another webhook-id: all %d remembered (DedupSize) are being handled, or were handled with a timestamp still within tolerance %s, so a replay of them must still be recognised",
			rc.cfg.DedupSize, tol))
		return
	}
	d := Delivery{ID: id, Timestamp: at, Body: body}
	r2 := r.WithContext(context.WithValue(r.Context(), deliveryKey{}, d))
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	sw := &statusWriter{ResponseWriter: w}
	ok := false
	defer func() {
		// A panicking next (recovered by net/http) counts as failed.
		rc.mu.Lock()
		rc.seen.finish(id, ok, rc.cfg.Now())
		rc.mu.Unlock()
	}()
	rc.next.ServeHTTP(sw, r2)
	code := sw.code
	if code == 0 {
		code = http.StatusOK
	}
	ok = code >= 200 && code < 300
	if ok {
		rc.stats.accepted.Add(1)
	} else {
		rc.stats.failed.Add(1)
	}
}

// readBody reads r's body up to max bytes; more is an *http.MaxBytesError.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	if r.ContentLength > max {
		return nil, &http.MaxBytesError{Limit: max}
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, max))
}

// statusWriter records the status code next writes.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
