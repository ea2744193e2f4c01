package api

import (
	"net/http"
	"net/url"
	"time"

	"github.com/brokerless/brokerless/webhook"
	"github.com/brokerless/brokerless/webhook/store"
)

// Limits on endpoint fields.
const (
	maxURLLen        = 2048
	maxDescription   = 1024
	maxEventTypes    = 100
	maxEventTypeLen  = 256
	defaultGrace     = 24 * time.Hour
	maxGrace         = 30 * 24 * time.Hour
	maxRecoverWindow = 365 * 24 * time.Hour
)

type endpointOut struct {
	ID             string     `json:"id"`
	URL            string     `json:"url"`
	Description    string     `json:"description"`
	EventTypes     []string   `json:"event_types"`
	RateLimit      int        `json:"rate_limit"`
	Enabled        bool       `json:"enabled"`
	DisabledReason string     `json:"disabled_reason,omitempty"`
	FailingSince   *time.Time `json:"failing_since,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
}

func endpointView(e *store.Endpoint) endpointOut {
	o := endpointOut{ID: e.ID, URL: e.URL, Description: e.Description, EventTypes: e.EventTypes, RateLimit: e.RateLimit,
		Enabled: e.Enabled, DisabledReason: e.DisabledReason, CreatedAt: e.Created.UTC(), UpdatedAt: e.Updated.UTC()}
	if o.EventTypes == nil {
		o.EventTypes = []string{}
	}
	if !e.FailingSince.IsZero() {
		fs := e.FailingSince.UTC()
		o.FailingSince = &fs
	}
	return o
}

type endpointIn struct {
	URL         *string   `json:"url"`
	Description *string   `json:"description"`
	EventTypes  *[]string `json:"event_types"`
	RateLimit   *int      `json:"rate_limit"`
	Enabled     *bool     `json:"enabled"`
	// Secret sets the signing secret on creation (generated if absent).
	Secret *string `json:"secret"`
}

// apply checks the fields given and sets them on e.
func (s *Server) apply(in *endpointIn, e *store.Endpoint, now time.Time) error {
	if in.URL != nil {
		if len(*in.URL) > maxURLLen {
			return badRequest("url: longer than %d bytes", maxURLLen)
		}
		u, err := url.Parse(*in.URL)
		if err != nil {
			return badRequest("url: %v", err)
		}
		if err := s.cfg.Addresses.CheckURL(u); err != nil {
			return badRequest("url: %v", err)
		}
		e.URL = u.String()
	}
	if in.Description != nil {
		if len(*in.Description) > maxDescription {
			return badRequest("description: longer than %d bytes", maxDescription)
		}
		e.Description = *in.Description
	}
	if in.EventTypes != nil {
		if len(*in.EventTypes) > maxEventTypes {
			return badRequest("event_types: more than %d", maxEventTypes)
		}
		for _, t := range *in.EventTypes {
			if t == "" || len(t) > maxEventTypeLen {
				return badRequest("event_types: %q: want 1 to %d bytes", t, maxEventTypeLen)
			}
		}
		e.EventTypes = *in.EventTypes
	}
	if in.RateLimit != nil {
		if *in.RateLimit < 0 || *in.RateLimit > 100000 {
			return badRequest("rate_limit: %d: want 0 (none) to 100000 deliveries a second", *in.RateLimit)
		}
		e.RateLimit = *in.RateLimit
	}
	if in.Enabled != nil {
		if *in.Enabled && !e.Enabled {
			e.DisabledReason, e.FailingSince = "", time.Time{}
		}
		if !*in.Enabled && e.Enabled {
			e.DisabledReason = "disabled through the API"
		}
		e.Enabled = *in.Enabled
	}
	e.Updated = now
	return nil
}

func (s *Server) secret(given *string) (webhook.Secret, error) {
	if given != nil {
		sec, err := webhook.ParseSecret(*given)
		if err != nil {
			return webhook.Secret{}, badRequest("secret: %v", err)
		}
		return sec, nil
	}
	return webhook.NewSecret(s.cfg.Rand)
}

func (s *Server) createEndpoint(r *http.Request) (int, any, error) {
	var in endpointIn
	if err := decode(r, &in); err != nil {
		return 0, nil, err
	}
	if in.URL == nil {
		return 0, nil, badRequest("url: required")
	}
	now := s.cfg.Now()
	e := &store.Endpoint{ID: store.NewID("ep", now), Enabled: true, Created: now}
	if err := s.apply(&in, e, now); err != nil {
		return 0, nil, err
	}
	sec, err := s.secret(in.Secret)
	if err != nil {
		return 0, nil, err
	}
	e.Secrets = []store.Secret{{Secret: sec.String()}}
	if err := s.cfg.Store.CreateEndpoint(r.Context(), e); err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, struct {
		endpointOut
		Secret string `json:"secret"`
	}{endpointView(e), sec.String()}, nil
}

func (s *Server) listEndpoints(r *http.Request) (int, any, error) {
	list, err := s.cfg.Store.ListEndpoints(r.Context())
	if err != nil {
		return 0, nil, err
	}
	out := []endpointOut{}
	for _, e := range list {
		out = append(out, endpointView(e))
	}
	return http.StatusOK, map[string]any{"data": out}, nil
}

func (s *Server) getEndpoint(r *http.Request) (int, any, error) {
	e, err := s.cfg.Store.GetEndpoint(r.Context(), r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, endpointView(e), nil
}

func (s *Server) updateEndpoint(r *http.Request) (int, any, error) {
	var in endpointIn
	if err := decode(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Secret != nil {
		return 0, nil, badRequest("secret: change it with POST /v1/endpoints/{id}/secret/rotate")
	}
	var wasEnabled bool
	e, err := s.change(r, func(e *store.Endpoint) error {
		wasEnabled = e.Enabled
		return s.apply(&in, e, s.cfg.Now())
	})
	if err != nil {
		return 0, nil, err
	}
	if e.Enabled && !wasEnabled {
		s.cfg.Notify()
	}
	return http.StatusOK, endpointView(e), nil
}

// change reads the endpoint of the request's path, applies f to it and
// writes it, in one store transaction (store.ChangeEndpoint): a write
// made meanwhile (the dispatcher disabled it or recorded its health,
// another request changed it) lands before or after, so it is never
// undone by a stale copy, and never makes the request give up however
// often it comes (a PATCH read and wrote again up to 8 times, then gave
// up with 409: against an endpoint whose health flipped many times a
// second, always).
func (s *Server) change(r *http.Request, f func(e *store.Endpoint) error) (*store.Endpoint, error) {
	return s.cfg.Store.ChangeEndpoint(r.Context(), r.PathValue("id"), f)
}

func (s *Server) deleteEndpoint(r *http.Request) (int, any, error) {
	return http.StatusNoContent, nil, s.cfg.Store.DeleteEndpoint(r.Context(), r.PathValue("id"))
}

type secretOut struct {
	Secret string `json:"secret"`
	// Previous lists rotated-out secrets still signing until they expire.
	Previous []previousSecret `json:"previous,omitempty"`
}

type previousSecret struct {
	Secret  string    `json:"secret"`
	Expires time.Time `json:"expires_at"`
}

func secretView(e *store.Endpoint, now time.Time) secretOut {
	var o secretOut
	for _, sec := range e.Secrets {
		switch {
		case sec.Expires.IsZero():
			o.Secret = sec.Secret
		case now.Before(sec.Expires):
			o.Previous = append(o.Previous, previousSecret{sec.Secret, sec.Expires.UTC()})
		}
	}
	return o
}

func (s *Server) getSecret(r *http.Request) (int, any, error) {
	e, err := s.cfg.Store.GetEndpoint(r.Context(), r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, secretView(e, s.cfg.Now()), nil
}

func (s *Server) rotateSecret(r *http.Request) (int, any, error) {
	var in struct {
		Secret       *string `json:"secret"`
		GraceSeconds *int64  `json:"grace_seconds"`
	}
	if err := decode(r, &in); err != nil {
		return 0, nil, err
	}
	grace := defaultGrace
	if in.GraceSeconds != nil {
		if *in.GraceSeconds < 0 || time.Duration(*in.GraceSeconds)*time.Second > maxGrace {
			return 0, nil, badRequest("grace_seconds: %d: want 0 to %d", *in.GraceSeconds, int64(maxGrace/time.Second))
		}
		grace = time.Duration(*in.GraceSeconds) * time.Second
	}
	sec, err := s.secret(in.Secret)
	if err != nil {
		return 0, nil, err
	}
	var now time.Time
	e, err := s.change(r, func(e *store.Endpoint) error {
		now = s.cfg.Now()
		var keep []store.Secret
		for _, old := range e.Secrets {
			if old.Expires.IsZero() || old.Expires.After(now.Add(grace)) {
				old.Expires = now.Add(grace)
			}
			if now.Before(old.Expires) {
				keep = append(keep, old)
			}
		}
		// At most store.MaxSecrets sign an attempt: the oldest rotated-out
		// secrets expire now (Svix keeps only the previous one).
		if n := len(keep) - (store.MaxSecrets - 1); n > 0 {
			keep = keep[n:]
		}
		e.Secrets = append(keep, store.Secret{Secret: sec.String()})
		e.Updated = now
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, secretView(e, now), nil
}

func (s *Server) recoverEndpoint(r *http.Request) (int, any, error) {
	var in struct {
		Since *time.Time `json:"since"`
		Until *time.Time `json:"until"`
	}
	if err := decode(r, &in); err != nil {
		return 0, nil, err
	}
	now := s.cfg.Now()
	if in.Since == nil {
		return 0, nil, badRequest("since: required (RFC 3339 time)")
	}
	until := now
	if in.Until != nil {
		until = *in.Until
	}
	if !in.Since.Before(until) || until.Sub(*in.Since) > maxRecoverWindow {
		return 0, nil, badRequest("since %s, until %s: want since before until, at most %v apart", in.Since.Format(time.RFC3339), until.Format(time.RFC3339), maxRecoverWindow)
	}
	if _, err := s.cfg.Store.GetEndpoint(r.Context(), r.PathValue("id")); err != nil {
		return 0, nil, err
	}
	n, err := s.cfg.Store.Recover(r.Context(), r.PathValue("id"), *in.Since, until, now)
	if err != nil {
		return 0, nil, err
	}
	if n > 0 {
		s.cfg.Notify()
	}
	return http.StatusAccepted, map[string]int{"recovered": n}, nil
}
