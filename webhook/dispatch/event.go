package dispatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/brokerless/brokerless/webhook/store"
)

// envelope is the body of every delivery, as Standard Webhooks suggests:
// the event's type, when it happened and its data.
type envelope struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// MaxTypeLen is the longest event type, in bytes.
const MaxTypeLen = 256

// ReservedKeyPrefix begins the idempotency keys brokerless makes itself
// (package source's, one per log record). The API refuses keys with this
// prefix, so no client can take a key the source will need, and the
// source's keys never stand for a client's event.
const ReservedKeyPrefix = "brokerless:"

// ErrBadEvent is an event that cannot be stored or delivered as it is.
var ErrBadEvent = errors.New("dispatch: bad event")

// CheckType returns an error wrapping ErrBadEvent when typ cannot be an
// event type: empty, longer than MaxTypeLen, not valid UTF-8 or holding
// a NUL (a PostgreSQL TEXT column refuses the last two).
func CheckType(typ string) error {
	switch {
	case typ == "" || len(typ) > MaxTypeLen:
		return fmt.Errorf("%w: type: want 1 to %d bytes, got %d", ErrBadEvent, MaxTypeLen, len(typ))
	case !utf8.ValidString(typ):
		return fmt.Errorf("%w: type %q: not valid UTF-8", ErrBadEvent, typ)
	case strings.IndexByte(typ, 0) >= 0:
		return fmt.Errorf("%w: type %q: holds a NUL", ErrBadEvent, typ)
	}
	return nil
}

// CheckData returns an error wrapping ErrBadEvent when data, an event's
// payload, is not valid UTF-8: the official Standard Webhooks library
// hashes the body as a UTF-8 string, so a body that is not valid UTF-8
// could never verify there.
func CheckData(data []byte) error {
	if !utf8.Valid(data) {
		return fmt.Errorf("%w: data: not valid UTF-8", ErrBadEvent)
	}
	return nil
}

// NewEvent returns an event with a new msg_ id whose payload is the
// delivered body: {"type": typ, "timestamp": now, "data": data}. data
// must be valid JSON.
func NewEvent(typ string, data json.RawMessage, idempotencyKey string, now time.Time) *store.Event {
	now = now.UTC().Truncate(time.Millisecond)
	body, _ := json.Marshal(envelope{Type: typ, Timestamp: now, Data: data})
	return &store.Event{ID: store.NewID("msg", now), Type: typ, Payload: body, IdempotencyKey: idempotencyKey, Created: now}
}

// Operational event types, delivered to Config.NoticeEndpoint.
const (
	// NoticeEndpointDisabled: an endpoint was disabled (410 Gone, or
	// failing longer than DisableAfter).
	NoticeEndpointDisabled = "endpoint.disabled"
	// NoticeAttemptExhausted: a delivery failed for good.
	NoticeAttemptExhausted = "message.attempt.exhausted"
)

type endpointDisabled struct {
	EndpointID   string     `json:"endpointId"`
	URL          string     `json:"url"`
	Reason       string     `json:"reason"`
	FailingSince *time.Time `json:"failingSince,omitempty"`
}

type attemptExhausted struct {
	EventID    string `json:"msgId"`
	EventType  string `json:"eventType"`
	EndpointID string `json:"endpointId"`
	Attempts   int    `json:"attempts"`
	LastCode   int    `json:"lastResponseStatusCode"`
	LastError  string `json:"lastError,omitempty"`
}

func noticeEvent(typ string, v any, now time.Time) *store.Event {
	data, _ := json.Marshal(v)
	return NewEvent(typ, data, "", now)
}
