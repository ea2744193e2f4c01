package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/brokerless/brokerless/webhook/dispatch"
	"github.com/brokerless/brokerless/webhook/store"
)

// Limits on event fields.
const (
	maxKeyLen       = 256
	defaultListSize = 50
	maxListSize     = 500
)

type eventOut struct {
	ID             string          `json:"id"`
	Type           string          `json:"type"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	CreatedAt      time.Time       `json:"created_at"`
	Payload        json.RawMessage `json:"payload"`
}

func eventView(ev *store.Event) eventOut {
	return eventOut{ID: ev.ID, Type: ev.Type, IdempotencyKey: ev.IdempotencyKey, CreatedAt: ev.Created.UTC(), Payload: ev.Payload}
}

func (s *Server) createEvent(r *http.Request) (int, any, error) {
	var in struct {
		Type           string          `json:"type"`
		Data           json.RawMessage `json:"data"`
		IdempotencyKey string          `json:"idempotency_key"`
	}
	if err := decode(r, &in); err != nil {
		return 0, nil, err
	}
	if h := r.Header.Get("Idempotency-Key"); h != "" {
		if in.IdempotencyKey != "" && in.IdempotencyKey != h {
			return 0, nil, badRequest("idempotency_key %q differs from the Idempotency-Key header %q", in.IdempotencyKey, h)
		}
		in.IdempotencyKey = h
	}
	switch {
	case in.Type == "" || len(in.Type) > dispatch.MaxTypeLen:
		return 0, nil, badRequest("type: want 1 to %d bytes", dispatch.MaxTypeLen)
	case dispatch.CheckType(in.Type) != nil:
		return 0, nil, badRequest("type: want valid UTF-8 without NUL")
	case len(in.Data) == 0 || string(in.Data) == "null":
		return 0, nil, badRequest("data: required (any JSON value but null)")
	case dispatch.CheckData(in.Data) != nil:
		return 0, nil, badRequest("data: not valid UTF-8 (Standard Webhooks receivers hash the body as UTF-8 text: it could never verify)")
	case len(in.IdempotencyKey) > maxKeyLen:
		return 0, nil, badRequest("idempotency_key: longer than %d bytes", maxKeyLen)
	case strings.HasPrefix(in.IdempotencyKey, dispatch.ReservedKeyPrefix):
		// The source's keys: one taken here would make a log record a
		// silent duplicate, acknowledged and never stored.
		return 0, nil, badRequest("idempotency_key: the prefix %q is reserved for keys brokerless makes", dispatch.ReservedKeyPrefix)
	}
	ev := dispatch.NewEvent(in.Type, in.Data, in.IdempotencyKey, s.cfg.Now())
	created, err := s.cfg.Store.InsertEvent(r.Context(), ev)
	if err != nil {
		return 0, nil, err
	}
	if !created {
		return http.StatusOK, eventView(ev), nil
	}
	s.cfg.Notify()
	return http.StatusAccepted, eventView(ev), nil
}

func (s *Server) listEvents(r *http.Request) (int, any, error) {
	limit := defaultListSize
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListSize {
			return 0, nil, badRequest("limit %q: want 1 to %d", v, maxListSize)
		}
		limit = n
	}
	var before time.Time
	if v := r.URL.Query().Get("before"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return 0, nil, badRequest("before %q: want an RFC 3339 time", v)
		}
		before = t
	}
	// The next page starts after the last event of the previous one, its
	// created_at and id: many events can share a creation time.
	beforeID := r.URL.Query().Get("before_id")
	if beforeID != "" && before.IsZero() {
		return 0, nil, badRequest("before_id: only with before (the created_at of that event)")
	}
	list, err := s.cfg.Store.ListEvents(r.Context(), before, beforeID, limit)
	if err != nil {
		return 0, nil, err
	}
	out := []eventOut{}
	for _, ev := range list {
		out = append(out, eventView(ev))
	}
	return http.StatusOK, map[string]any{"data": out}, nil
}

func (s *Server) getEvent(r *http.Request) (int, any, error) {
	ev, err := s.cfg.Store.GetEvent(r.Context(), r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, eventView(ev), nil
}

type attemptOut struct {
	ID         string    `json:"id"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS float64   `json:"duration_ms"`
	StatusCode int       `json:"status_code"`
	Error      string    `json:"error,omitempty"`
	Response   string    `json:"response"`
	Outcome    string    `json:"outcome"`
}

type deliveryOut struct {
	ID          string       `json:"id"`
	EndpointID  string       `json:"endpoint_id"`
	Status      string       `json:"status"`
	Attempts    []attemptOut `json:"attempts"`
	NextAttempt *time.Time   `json:"next_attempt_at,omitempty"`
	LastCode    int          `json:"last_status_code"`
}

func (s *Server) listDeliveries(r *http.Request) (int, any, error) {
	id := r.PathValue("id")
	if _, err := s.cfg.Store.GetEvent(r.Context(), id); err != nil {
		return 0, nil, err
	}
	ds, err := s.cfg.Store.ListDeliveries(r.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	as, err := s.cfg.Store.ListAttempts(r.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	out := []deliveryOut{}
	for _, d := range ds {
		o := deliveryOut{ID: d.ID, EndpointID: d.EndpointID, Status: d.Status, LastCode: d.LastCode, Attempts: []attemptOut{}}
		if d.Status == store.StatusPending {
			n := d.NextAttempt.UTC()
			o.NextAttempt = &n
		}
		for _, a := range as {
			if a.DeliveryID == d.ID {
				o.Attempts = append(o.Attempts, attemptOut{ID: a.ID, StartedAt: a.Started.UTC(), DurationMS: float64(a.Duration) / float64(time.Millisecond),
					StatusCode: a.StatusCode, Error: a.Error, Response: string(a.Response), Outcome: a.Outcome})
			}
		}
		out = append(out, o)
	}
	return http.StatusOK, map[string]any{"data": out}, nil
}

func (s *Server) resend(r *http.Request) (int, any, error) {
	var in struct {
		EndpointID string `json:"endpoint_id"`
	}
	if r.ContentLength != 0 {
		if err := decode(r, &in); err != nil {
			return 0, nil, err
		}
	}
	n, err := s.cfg.Store.Resend(r.Context(), r.PathValue("id"), in.EndpointID, s.cfg.Now())
	if err != nil {
		return 0, nil, err
	}
	if n > 0 {
		s.cfg.Notify()
	}
	return http.StatusAccepted, map[string]int{"scheduled": n}, nil
}
