package api

import (
	"net/http"
	"time"
)

type tokenOut struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	// Token is shown once, when the token is created.
	Token string `json:"token,omitempty"`
}

func (s *Server) createToken(r *http.Request) (int, any, error) {
	var in struct {
		Name string `json:"name"`
	}
	if err := decode(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Name == "" || len(in.Name) > 256 {
		return 0, nil, badRequest("name: want 1 to 256 bytes")
	}
	t, tok, err := NewToken(r.Context(), s.cfg.Store, in.Name, s.cfg.Now(), s.cfg.Rand)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, tokenOut{ID: t.ID, Name: t.Name, CreatedAt: t.Created.UTC(), Token: tok}, nil
}

func (s *Server) listTokens(r *http.Request) (int, any, error) {
	list, err := s.cfg.Store.ListTokens(r.Context())
	if err != nil {
		return 0, nil, err
	}
	out := []tokenOut{}
	for _, t := range list {
		o := tokenOut{ID: t.ID, Name: t.Name, CreatedAt: t.Created.UTC()}
		if !t.Revoked.IsZero() {
			rv := t.Revoked.UTC()
			o.RevokedAt = &rv
		}
		out = append(out, o)
	}
	return http.StatusOK, map[string]any{"data": out}, nil
}

func (s *Server) revokeToken(r *http.Request) (int, any, error) {
	return http.StatusNoContent, nil, s.cfg.Store.RevokeToken(r.Context(), r.PathValue("id"), s.cfg.Now())
}
