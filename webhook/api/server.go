package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/brokerless/brokerless/webhook"
	"github.com/brokerless/brokerless/webhook/store"
)

// DefaultMaxBodyBytes caps a request body (an event's data with its envelope).
const DefaultMaxBodyBytes = 256 << 10

// ErrBadConfig wraps every ConfigError.
var ErrBadConfig = errors.New("api: bad config")

// ConfigError is a Config field whose value is outside what it allows.
type ConfigError struct {
	Field string
	Value any
	Want  string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("api: bad config: %s %v: %s", e.Field, e.Value, e.Want)
}

func (e *ConfigError) Unwrap() error { return ErrBadConfig }

// Setting returns the field, its value and what it allows.
func (e *ConfigError) Setting() (string, any, string) { return e.Field, e.Value, e.Want }

// Config configures a Server.
type Config struct {
	// Store is the dispatcher's store (required).
	Store store.Store
	// Addresses checks endpoint URLs when they are set (CheckURL); the
	// dispatcher checks every connection again.
	Addresses webhook.AddressPolicy
	// MaxBodyBytes caps request bodies (DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Notify, if set, is called when deliveries may have become due (an
	// event stored, resent or recovered, an endpoint enabled).
	Notify func()
	// Now is the clock (time.Now); Rand the source of secrets and tokens
	// (crypto/rand).
	Now  func() time.Time
	Rand io.Reader
	// Logger gets store errors (discarded by default).
	Logger *slog.Logger
}

// Server serves the API.
type Server struct {
	cfg    Config
	mux    *http.ServeMux
	routes []string
}

// New returns a Server.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Store == nil:
		return nil, &ConfigError{"Store", nil, "required"}
	case cfg.MaxBodyBytes < 0:
		return nil, &ConfigError{"MaxBodyBytes", cfg.MaxBodyBytes, "must be > 0"}
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Notify == nil {
		cfg.Notify = func() {}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux()}
	s.handle("GET /v1/openapi.json", false, s.openAPI)
	s.handle("GET /v1/endpoints", true, s.listEndpoints)
	s.handle("POST /v1/endpoints", true, s.createEndpoint)
	s.handle("GET /v1/endpoints/{id}", true, s.getEndpoint)
	s.handle("PATCH /v1/endpoints/{id}", true, s.updateEndpoint)
	s.handle("DELETE /v1/endpoints/{id}", true, s.deleteEndpoint)
	s.handle("GET /v1/endpoints/{id}/secret", true, s.getSecret)
	s.handle("POST /v1/endpoints/{id}/secret/rotate", true, s.rotateSecret)
	s.handle("POST /v1/endpoints/{id}/recover", true, s.recoverEndpoint)
	s.handle("POST /v1/events", true, s.createEvent)
	s.handle("GET /v1/events", true, s.listEvents)
	s.handle("GET /v1/events/{id}", true, s.getEvent)
	s.handle("GET /v1/events/{id}/deliveries", true, s.listDeliveries)
	s.handle("POST /v1/events/{id}/resend", true, s.resend)
	s.handle("GET /v1/tokens", true, s.listTokens)
	s.handle("POST /v1/tokens", true, s.createToken)
	s.handle("DELETE /v1/tokens/{id}", true, s.revokeToken)
	s.mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such route: %s %s", r.Method, r.URL.Path)
	})
	return s, nil
}

// Routes lists the routes, "METHOD /path", in the order they were added.
func (s *Server) Routes() []string { return append([]string(nil), s.routes...) }

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// handler is a route's function: it returns the status and the value to
// send as JSON (nil for no body), or an error.
type handler func(r *http.Request) (int, any, error)

func (s *Server) handle(pattern string, auth bool, h handler) {
	s.routes = append(s.routes, pattern)
	names := wildcards(pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if auth {
			if err := s.authenticate(r); err != nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="brokerless webhook"`)
				writeError(w, http.StatusUnauthorized, "%v", err)
				return
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		err := checkRequestText(r, names)
		var (
			code int
			v    any
		)
		if err == nil {
			code, v, err = h(r)
		}
		if err != nil {
			var he *httpError
			var mb *http.MaxBytesError
			switch {
			case errors.As(err, &he):
				writeError(w, he.code, "%s", he.msg)
			case errors.As(err, &mb):
				writeError(w, http.StatusRequestEntityTooLarge, "request body larger than %d bytes", mb.Limit)
			case errors.Is(err, store.ErrNotFound):
				writeError(w, http.StatusNotFound, "%v", strings.TrimPrefix(err.Error(), "store: "))
			default:
				s.cfg.Logger.Error("webhook API", "route", pattern, "err", err)
				writeError(w, http.StatusInternalServerError, "internal error")
			}
			return
		}
		if v == nil {
			w.WriteHeader(code)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	})
}

// httpError is a client error with its status.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	b, _ := json.Marshal(map[string]string{"error": fmt.Sprintf(format, args...)})
	w.Write(append(b, '\n'))
}

// decode reads the JSON body into v: one object, no unknown fields, no
// string holding a NUL (checkFields).
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return err
		}
		if errors.Is(err, io.EOF) {
			return badRequest("empty body: want a JSON object")
		}
		return badRequest("malformed JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return err
		}
		return badRequest("malformed JSON: more after the object")
	}
	return checkFields(v)
}

// Tokens.

// tokenPrefix starts every API token.
const tokenPrefix = "bwt_"

func hashToken(tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return h[:]
}

func (s *Server) authenticate(r *http.Request) error {
	h := r.Header.Get("Authorization")
	if h == "" {
		return errors.New("missing bearer token (Authorization: Bearer …)")
	}
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || tok == "" {
		return errors.New("the Authorization header is not a bearer token")
	}
	if _, err := s.cfg.Store.TokenByHash(r.Context(), hashToken(strings.TrimSpace(tok))); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errors.New("invalid or revoked token")
		}
		return errors.New("cannot check the token now")
	}
	return nil
}

// NewToken stores a new token named name, made of 32 bytes from rnd
// (crypto/rand if nil), and returns it; only its hash is kept.
func NewToken(ctx context.Context, st store.Store, name string, now time.Time, rnd io.Reader) (*store.Token, string, error) {
	t, tok, err := newToken(name, now, rnd)
	if err != nil {
		return nil, "", err
	}
	if err := st.CreateToken(ctx, t); err != nil {
		return nil, "", err
	}
	return t, tok, nil
}

// newToken makes a token named name from 32 bytes of rnd (crypto/rand if
// nil): what is stored, and the token itself.
func newToken(name string, now time.Time, rnd io.Reader) (*store.Token, string, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	var b [32]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return nil, "", err
	}
	tok := tokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return &store.Token{ID: store.NewID("tok", now), Name: name, Hash: hashToken(tok), Created: now}, tok, nil
}

// EnsureAdminToken creates a token named "admin" when the store has no
// token at all (first start) and returns it; otherwise it returns "".
// Of dispatchers starting together on a new database, one creates it.
func EnsureAdminToken(ctx context.Context, st store.Store, now time.Time, rnd io.Reader) (string, error) {
	t, tok, err := newToken("admin", now, rnd)
	if err != nil {
		return "", err
	}
	created, err := st.CreateFirstToken(ctx, t)
	if err != nil || !created {
		return "", err
	}
	return tok, nil
}
