package console

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// Cookie names.
const (
	sessionCookie = "brokerless_console"
	// loginCookie holds the login form's CSRF value (double submit).
	loginCookie = "brokerless_console_login"
	loginTTL    = 10 * time.Minute
	// maxFormBytes caps a form's body.
	maxFormBytes = 64 << 10
)

// session is one browser's login.
type session struct {
	id        string
	tokenHash []byte
	csrf      string
	created   time.Time
	expires   time.Time
	// flash is a message shown once, on the next page.
	flash string
}

// visit is what a handler knows of the request's access.
type visit struct {
	// sess is nil for a request with a bearer token.
	sess  *session
	csrf  string
	flash string
}

// hashToken is how the store keeps API tokens: their SHA-256.
func hashToken(tok string) []byte {
	h := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return h[:]
}

func (c *Console) random() (string, error) {
	var b [32]byte
	if _, err := io.ReadFull(c.cfg.Rand, b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// checkToken reports whether the token hash belongs to an unrevoked token.
func (c *Console) checkToken(r *http.Request, hash []byte) (bool, error) {
	_, err := c.cfg.Store.TokenByHash(r.Context(), hash)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	}
	return false, err
}

// authed lets through requests with a valid bearer token, or a valid
// session cookie and, for a POST, the session's CSRF token; it sends the
// others to the login form (GET) or refuses them (403).
func (c *Console) authed(h func(http.ResponseWriter, *http.Request, *visit)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		}
		if auth := r.Header.Get("Authorization"); auth != "" {
			tok, ok := strings.CutPrefix(auth, "Bearer ")
			valid := false
			if ok {
				var err error
				if valid, err = c.checkToken(r, hashToken(tok)); err != nil {
					c.internal(w, "checking a token", err)
					return
				}
			}
			if !valid {
				w.Header().Set("WWW-Authenticate", `Bearer realm="brokerless webhook"`)
				http.Error(w, "invalid or revoked token", http.StatusUnauthorized)
				return
			}
			if r.Method == http.MethodPost {
				if err := r.ParseForm(); err != nil {
					http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
					return
				}
			}
			h(w, r, &visit{})
			return
		}
		s, err := c.session(r)
		if err != nil {
			c.internal(w, "checking a session", err)
			return
		}
		if s == nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			http.Error(w, "not logged in: log in at /login", http.StatusForbidden)
			return
		}
		if r.Method == http.MethodPost {
			if err := r.ParseForm(); err != nil {
				http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
				return
			}
			if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
				http.Error(w, "missing or wrong CSRF token: reload the page and try again", http.StatusForbidden)
				return
			}
		}
		v := &visit{sess: s, csrf: s.csrf}
		if r.Method == http.MethodGet {
			c.mu.Lock()
			v.flash, s.flash = s.flash, ""
			c.mu.Unlock()
		}
		h(w, r, v)
	}
}

// session returns the request's live session, or nil.
func (c *Console) session(r *http.Request) (*session, error) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return nil, nil
	}
	now := c.cfg.Now()
	c.mu.Lock()
	s := c.sessions[ck.Value]
	if s != nil && !now.Before(s.expires) {
		delete(c.sessions, s.id)
		s = nil
	}
	c.mu.Unlock()
	if s == nil {
		return nil, nil
	}
	ok, err := c.checkToken(r, s.tokenHash)
	if err != nil {
		return nil, err
	}
	if !ok {
		c.mu.Lock()
		delete(c.sessions, s.id)
		c.mu.Unlock()
		return nil, nil
	}
	return s, nil
}

// setFlash shows msg on the visitor's next page.
func (c *Console) setFlash(v *visit, msg string) {
	if v.sess == nil {
		return
	}
	c.mu.Lock()
	v.sess.flash = msg
	c.mu.Unlock()
}

func (c *Console) loginForm(w http.ResponseWriter, r *http.Request) {
	if s, err := c.session(r); err == nil && s != nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	c.renderLogin(w, r, http.StatusOK, "")
}

func (c *Console) renderLogin(w http.ResponseWriter, r *http.Request, code int, problem string) {
	val, err := c.random()
	if err != nil {
		c.internal(w, "making a login form", err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: val, Path: "/login", MaxAge: int(loginTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	c.render(w, code, "login", map[string]any{"CSRF": val, "Problem": problem})
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
		return
	}
	ck, err := r.Cookie(loginCookie)
	if err != nil || ck.Value == "" || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(r.PostForm.Get("csrf"))) != 1 {
		http.Error(w, "missing or wrong CSRF token: reload the login page and try again", http.StatusForbidden)
		return
	}
	hash := hashToken(r.PostForm.Get("token"))
	ok, err := c.checkToken(r, hash)
	if err != nil {
		c.internal(w, "checking a token", err)
		return
	}
	if !ok {
		c.renderLogin(w, r, http.StatusUnauthorized, "That token is invalid or revoked.")
		return
	}
	id, err := c.random()
	if err != nil {
		c.internal(w, "making a session", err)
		return
	}
	csrf, err := c.random()
	if err != nil {
		c.internal(w, "making a session", err)
		return
	}
	now := c.cfg.Now()
	s := &session{id: id, tokenHash: hash, csrf: csrf, created: now, expires: now.Add(c.cfg.SessionTTL)}
	c.mu.Lock()
	c.evictLocked(now)
	c.sessions[id] = s
	c.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: "", Path: "/login", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", MaxAge: int(c.cfg.SessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// evictLocked makes room for one more session: expired ones go first,
// then the oldest.
func (c *Console) evictLocked(now time.Time) {
	if len(c.sessions) < c.cfg.MaxSessions {
		return
	}
	var oldest *session
	for id, s := range c.sessions {
		if !now.Before(s.expires) {
			delete(c.sessions, id)
			continue
		}
		if oldest == nil || s.created.Before(oldest.created) {
			oldest = s
		}
	}
	if len(c.sessions) >= c.cfg.MaxSessions && oldest != nil {
		delete(c.sessions, oldest.id)
	}
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, v *visit) {
	if v.sess != nil {
		c.mu.Lock()
		delete(c.sessions, v.sess.id)
		c.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// Sessions returns how many sessions are held.
func (c *Console) Sessions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}
