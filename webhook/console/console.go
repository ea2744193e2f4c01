package console

import (
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// Defaults of Config.
const (
	DefaultSessionTTL  = 12 * time.Hour
	DefaultMaxSessions = 1024
	// DefaultHealthEvents is how many recent events the health of the
	// endpoints is computed over.
	DefaultHealthEvents = 100
)

// ErrBadConfig wraps every ConfigError.
var ErrBadConfig = errors.New("console: bad config")

// ConfigError is a Config field whose value is outside what it allows.
type ConfigError struct {
	Field string
	Value any
	Want  string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("console: bad config: %s %v: %s", e.Field, e.Value, e.Want)
}

func (e *ConfigError) Unwrap() error { return ErrBadConfig }

// Setting returns the field, its value and what it allows.
func (e *ConfigError) Setting() (string, any, string) { return e.Field, e.Value, e.Want }

// Config configures a Console. Zero fields take the defaults shown.
type Config struct {
	// Store is the dispatcher's store (required).
	Store store.Store
	// Notify, if set, is called when deliveries may have become due (an
	// event resent or recovered, an endpoint enabled): the dispatcher's
	// Notify.
	Notify func()
	// SessionTTL is how long a login lasts (12 h).
	SessionTTL time.Duration
	// MaxSessions bounds the sessions held (1024); a login beyond it
	// ends the oldest session.
	MaxSessions int
	// HealthEvents is how many recent events the endpoints' success
	// rates are computed over (100).
	HealthEvents int
	// Now is the clock (time.Now); Rand the source of session ids and
	// CSRF tokens (crypto/rand).
	Now  func() time.Time
	Rand io.Reader
	// Logger gets store errors (discarded by default).
	Logger *slog.Logger
}

// Console serves the operator console.
type Console struct {
	cfg  Config
	mux  *http.ServeMux
	tmpl *template.Template

	mu       sync.Mutex
	sessions map[string]*session
}

//go:embed templates.html
var templateFS embed.FS

// New returns a Console.
func New(cfg Config) (*Console, error) {
	switch {
	case cfg.Store == nil:
		return nil, &ConfigError{"Store", nil, "required"}
	case cfg.SessionTTL < 0:
		return nil, &ConfigError{"SessionTTL", cfg.SessionTTL, "must be > 0"}
	case cfg.MaxSessions < 0:
		return nil, &ConfigError{"MaxSessions", cfg.MaxSessions, "must be > 0"}
	case cfg.HealthEvents < 0 || cfg.HealthEvents > 1000:
		return nil, &ConfigError{"HealthEvents", cfg.HealthEvents, "must be in [1, 1000]"}
	}
	if cfg.Notify == nil {
		cfg.Notify = func() {}
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.MaxSessions == 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.HealthEvents == 0 {
		cfg.HealthEvents = DefaultHealthEvents
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
	tmpl, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates.html")
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, mux: http.NewServeMux(), tmpl: tmpl, sessions: map[string]*session{}}
	c.mux.HandleFunc("GET /login", c.loginForm)
	c.mux.HandleFunc("POST /login", c.login)
	c.mux.HandleFunc("POST /logout", c.authed(c.logout))
	c.mux.HandleFunc("GET /{$}", c.authed(c.endpointsPage))
	c.mux.HandleFunc("GET /endpoints/{id}", c.authed(c.endpointPage))
	c.mux.HandleFunc("POST /endpoints/{id}/disable", c.authed(c.setEnabled(false)))
	c.mux.HandleFunc("POST /endpoints/{id}/enable", c.authed(c.setEnabled(true)))
	c.mux.HandleFunc("POST /endpoints/{id}/recover", c.authed(c.recoverEndpoint))
	c.mux.HandleFunc("GET /events", c.authed(c.eventsPage))
	c.mux.HandleFunc("GET /events/{id}", c.authed(c.eventPage))
	c.mux.HandleFunc("POST /events/{id}/resend", c.authed(c.resend))
	return c, nil
}

// ServeHTTP serves the console.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	c.mux.ServeHTTP(w, r)
}

// Handler serves the API under /v1/ and the console everywhere else, as
// the dispatcher's listener does.
func Handler(api http.Handler, c *Console) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/v1/", api)
	mux.Handle("/", c)
	return mux
}
