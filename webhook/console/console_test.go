package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/api"
	"github.com/brokerless/brokerless/webhook/console"
	"github.com/brokerless/brokerless/webhook/dispatch"
	"github.com/brokerless/brokerless/webhook/store"
)

// fixture is a console on a SQLite store with one token, served by
// httptest beside the API.
type fixture struct {
	t        *testing.T
	st       store.Store
	con      *console.Console
	srv      *httptest.Server
	token    string
	tokenID  string
	notified atomic.Int64
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "webhook.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{t: t, st: st}
	tok, secret, err := api.NewToken(ctx, st, "test", time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	f.token, f.tokenID = secret, tok.ID
	f.con, err = console.New(console.Config{Store: st, Notify: func() { f.notified.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	a, err := api.New(api.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(console.Handler(a, f.con))
	t.Cleanup(f.srv.Close)
	return f
}

// client returns a browser-like client: a cookie jar, no redirects followed.
func (f *fixture) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (f *fixture) do(c *http.Client, method, path string, form url.Values, hdr ...string) (int, http.Header, string) {
	f.t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, resp.Header, sb.String()
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF field in the page:\n%s", page)
	}
	return m[1]
}

// login logs c in and returns the session's CSRF token.
func (f *fixture) login(c *http.Client) string {
	f.t.Helper()
	code, _, page := f.do(c, "GET", "/login", nil)
	if code != http.StatusOK {
		f.t.Fatalf("GET /login: %d", code)
	}
	code, hdr, _ := f.do(c, "POST", "/login", url.Values{"csrf": {csrfOf(f.t, page)}, "token": {f.token}})
	if code != http.StatusSeeOther || hdr.Get("Location") != "/" {
		f.t.Fatalf("POST /login: %d to %q, want 303 to /", code, hdr.Get("Location"))
	}
	code, _, page = f.do(c, "GET", "/", nil)
	if code != http.StatusOK {
		f.t.Fatalf("GET / after login: %d", code)
	}
	return csrfOf(f.t, page)
}

// endpoint stores an endpoint.
func (f *fixture) endpoint(id, desc string) *store.Endpoint {
	f.t.Helper()
	now := time.Now()
	e := &store.Endpoint{ID: id, URL: "http://127.0.0.1:9/" + id, Description: desc, Enabled: true,
		Secrets: []store.Secret{{Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}, Created: now, Updated: now}
	if err := f.st.CreateEndpoint(context.Background(), e); err != nil {
		f.t.Fatal(err)
	}
	return e
}

// event stores an event (delivered to every enabled endpoint) at created.
func (f *fixture) event(typ string, created time.Time) *store.Event {
	f.t.Helper()
	ev := dispatch.NewEvent(typ, json.RawMessage(`{"n":1}`), "", created)
	if _, err := f.st.InsertEvent(context.Background(), ev); err != nil {
		f.t.Fatal(err)
	}
	return ev
}

// failAll records one failed attempt (HTTP 500) for every due delivery,
// leaving each failed for good.
func (f *fixture) failAll() int {
	f.t.Helper()
	ctx := context.Background()
	now := time.Now()
	jobs, err := f.st.Claim(ctx, store.ClaimRequest{Owner: "test", Now: now.Add(time.Hour), Lease: time.Minute, Limit: 1000, PerEndpoint: 1000})
	if err != nil {
		f.t.Fatal(err)
	}
	var cs []*store.Completion
	for _, j := range jobs {
		cs = append(cs, &store.Completion{Owner: "test", Status: store.StatusFailed, Attempt: store.Attempt{
			ID: store.NewID("att", now), DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: j.Endpoint.ID,
			Started: now, Duration: 3 * time.Millisecond, StatusCode: 500, Response: []byte("<b>boom</b>"), Outcome: store.StatusFailed}})
	}
	if len(cs) > 0 {
		if err := f.st.Complete(ctx, cs...); err != nil {
			f.t.Fatal(err)
		}
	}
	return len(cs)
}

func (f *fixture) deliveries(eventID string) []*store.Delivery {
	f.t.Helper()
	ds, err := f.st.ListDeliveries(context.Background(), eventID)
	if err != nil {
		f.t.Fatal(err)
	}
	return ds
}

func TestAuthRequired(t *testing.T) {
	f := newFixture(t)
	f.endpoint("ep_a", "")
	ev := f.event("order.created", time.Now())
	c := f.client()
	for _, path := range []string{"/", "/events", "/events/" + ev.ID, "/endpoints/ep_a"} {
		code, hdr, _ := f.do(c, "GET", path, nil)
		if code != http.StatusSeeOther || hdr.Get("Location") != "/login" {
			t.Errorf("GET %s without a session: %d to %q, want 303 to /login", path, code, hdr.Get("Location"))
		}
	}
	for _, path := range []string{"/events/" + ev.ID + "/resend", "/endpoints/ep_a/disable", "/endpoints/ep_a/enable", "/endpoints/ep_a/recover", "/logout"} {
		if code, _, _ := f.do(c, "POST", path, url.Values{}); code != http.StatusForbidden {
			t.Errorf("POST %s without a session: %d, want 403", path, code)
		}
	}
	// A made-up session cookie is no session.
	u, _ := url.Parse(f.srv.URL)
	c.Jar.SetCookies(u, []*http.Cookie{{Name: "brokerless_console", Value: "forged"}})
	if code, _, _ := f.do(c, "GET", "/", nil); code != http.StatusSeeOther {
		t.Errorf("GET / with a forged session cookie: %d, want 303", code)
	}
	// Bearer tokens: a wrong one is refused, the right one needs no CSRF token.
	if code, _, _ := f.do(c, "GET", "/", nil, "Authorization", "Bearer bwt_wrong"); code != http.StatusUnauthorized {
		t.Errorf("GET / with a wrong bearer token: %d, want 401", code)
	}
	if code, _, page := f.do(c, "GET", "/", nil, "Authorization", "Bearer "+f.token); code != http.StatusOK || !strings.Contains(page, "ep_a") {
		t.Errorf("GET / with the bearer token: %d, want 200 listing ep_a", code)
	}
	if code, _, _ := f.do(c, "POST", "/endpoints/ep_a/disable", url.Values{}, "Authorization", "Bearer "+f.token); code != http.StatusSeeOther {
		t.Errorf("POST disable with the bearer token: %d, want 303", code)
	}
	if e, _ := f.st.GetEndpoint(context.Background(), "ep_a"); e.Enabled {
		t.Error("ep_a still enabled after a disable with the bearer token")
	}
}

func TestLogin(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	code, hdr, page := f.do(c, "GET", "/login", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /login: %d", code)
	}
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q lets scripts run", csp)
	}
	csrf := csrfOf(t, page)
	// Without the pre-session value, or with a wrong one: refused.
	other := f.client()
	if code, _, _ := f.do(other, "POST", "/login", url.Values{"csrf": {csrf}, "token": {f.token}}); code != http.StatusForbidden {
		t.Errorf("POST /login without the login cookie: %d, want 403", code)
	}
	if code, _, _ := f.do(c, "POST", "/login", url.Values{"csrf": {"wrong"}, "token": {f.token}}); code != http.StatusForbidden {
		t.Errorf("POST /login with a wrong CSRF value: %d, want 403", code)
	}
	code, _, page = f.do(c, "POST", "/login", url.Values{"csrf": {csrf}, "token": {"bwt_wrong"}})
	if code != http.StatusUnauthorized || !strings.Contains(page, "invalid or revoked") {
		t.Errorf("POST /login with a wrong token: %d, want 401 saying so", code)
	}
	if f.con.Sessions() != 0 {
		t.Fatalf("%d sessions after failed logins", f.con.Sessions())
	}
	_, _, page = f.do(c, "GET", "/login", nil)
	code, hdr, _ = f.do(c, "POST", "/login", url.Values{"csrf": {csrfOf(t, page)}, "token": {f.token}})
	if code != http.StatusSeeOther {
		t.Fatalf("POST /login with the token: %d, want 303", code)
	}
	var sc *http.Cookie
	for _, ck := range (&http.Response{Header: hdr}).Cookies() {
		if ck.Name == "brokerless_console" {
			sc = ck
		}
	}
	switch {
	case sc == nil:
		t.Fatal("no session cookie set")
	case !sc.HttpOnly || sc.SameSite != http.SameSiteStrictMode:
		t.Errorf("session cookie HttpOnly %v SameSite %v, want HttpOnly and Strict", sc.HttpOnly, sc.SameSite)
	case strings.Contains(sc.Value, f.token):
		t.Error("the session cookie holds the token")
	}
	if code, _, _ := f.do(c, "GET", "/", nil); code != http.StatusOK {
		t.Fatalf("GET / logged in: %d", code)
	}
	// Revoking the token ends the session.
	if err := f.st.RevokeToken(context.Background(), f.tokenID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := f.do(c, "GET", "/", nil); code != http.StatusSeeOther {
		t.Errorf("GET / after the token was revoked: %d, want 303 to /login", code)
	}
}

func TestLogout(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	csrf := f.login(c)
	if code, _, _ := f.do(c, "POST", "/logout", url.Values{"csrf": {csrf}}); code != http.StatusSeeOther {
		t.Fatalf("POST /logout: %d", code)
	}
	if f.con.Sessions() != 0 {
		t.Errorf("%d sessions after logout", f.con.Sessions())
	}
	if code, _, _ := f.do(c, "GET", "/", nil); code != http.StatusSeeOther {
		t.Errorf("GET / after logout: %d, want 303", code)
	}
}

func TestCSRFRefused(t *testing.T) {
	f := newFixture(t)
	f.endpoint("ep_a", "")
	ev := f.event("order.created", time.Now().Add(-time.Minute))
	f.failAll()
	c := f.client()
	csrf := f.login(c)
	other := f.login(f.client())
	for _, bad := range []url.Values{{}, {"csrf": {"wrong"}}, {"csrf": {other}}} {
		for _, path := range []string{"/events/" + ev.ID + "/resend", "/endpoints/ep_a/disable", "/endpoints/ep_a/recover", "/logout"} {
			form := url.Values{"since": {time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}}
			for k, v := range bad {
				form[k] = v
			}
			if code, _, _ := f.do(c, "POST", path, form); code != http.StatusForbidden {
				t.Errorf("POST %s with csrf %q: %d, want 403", path, bad.Get("csrf"), code)
			}
		}
	}
	if d := f.deliveries(ev.ID)[0]; d.Status != store.StatusFailed {
		t.Errorf("delivery %s after refused POSTs, want still failed", d.Status)
	}
	if e, _ := f.st.GetEndpoint(context.Background(), "ep_a"); !e.Enabled {
		t.Error("endpoint disabled by a refused POST")
	}
	if f.con.Sessions() != 2 {
		t.Errorf("%d sessions, want 2 (a refused logout ended one)", f.con.Sessions())
	}
	// The right token goes through.
	if code, _, _ := f.do(c, "POST", "/endpoints/ep_a/disable", url.Values{"csrf": {csrf}}); code != http.StatusSeeOther {
		t.Errorf("POST disable with the CSRF token: %d, want 303", code)
	}
}

func TestButtons(t *testing.T) {
	f := newFixture(t)
	f.endpoint("ep_a", "")
	f.endpoint("ep_b", "")
	old := f.event("order.created", time.Now().Add(-3*time.Hour))
	recent := f.event("order.paid", time.Now().Add(-time.Minute))
	if n := f.failAll(); n != 4 {
		t.Fatalf("%d deliveries failed, want 4", n)
	}
	c := f.client()
	csrf := f.login(c)
	ctx := context.Background()

	t.Run("disable and enable", func(t *testing.T) {
		code, hdr, _ := f.do(c, "POST", "/endpoints/ep_a/disable", url.Values{"csrf": {csrf}, "back": {"/"}})
		if code != http.StatusSeeOther || hdr.Get("Location") != "/" {
			t.Fatalf("disable: %d to %q", code, hdr.Get("Location"))
		}
		e, _ := f.st.GetEndpoint(ctx, "ep_a")
		if e.Enabled || e.DisabledReason == "" {
			t.Fatalf("after disable: enabled %v reason %q", e.Enabled, e.DisabledReason)
		}
		if _, _, page := f.do(c, "GET", "/", nil); !strings.Contains(page, "Endpoint ep_a disabled") || !strings.Contains(page, "disabled in the console") {
			t.Errorf("the endpoints page after disable shows no message or reason:\n%s", page)
		}
		before := f.notified.Load()
		f.do(c, "POST", "/endpoints/ep_a/enable", url.Values{"csrf": {csrf}})
		if e, _ := f.st.GetEndpoint(ctx, "ep_a"); !e.Enabled || e.DisabledReason != "" {
			t.Fatalf("after enable: enabled %v reason %q", e.Enabled, e.DisabledReason)
		}
		if f.notified.Load() == before {
			t.Error("enabling did not notify the dispatcher")
		}
		// The redirect never leaves the console: browsers drop TAB, CR and
		// LF from a URL ("/\t/evil.example/" is "//evil.example/" to them)
		// and read a backslash as a slash.
		for _, back := range []string{"//evil.example/", "/\t/evil.example/", "/\r\n/evil.example/", "/\\evil.example/",
			"/\x00/evil.example/", "/\x7f/evil.example/", "https://evil.example/", "evil.example/", ""} {
			_, hdr, _ = f.do(c, "POST", "/endpoints/ep_a/enable", url.Values{"csrf": {csrf}, "back": {back}})
			if hdr.Get("Location") != "/endpoints/ep_a" {
				t.Errorf("back %q redirected to %q", back, hdr.Get("Location"))
			}
		}
		_, hdr, _ = f.do(c, "POST", "/endpoints/ep_a/enable", url.Values{"csrf": {csrf}, "back": {"/events?before=2026-01-01T00:00:00Z"}})
		if hdr.Get("Location") != "/events?before=2026-01-01T00:00:00Z" {
			t.Errorf("back /events?before=… redirected to %q", hdr.Get("Location"))
		}
	})

	t.Run("resend", func(t *testing.T) {
		code, hdr, _ := f.do(c, "POST", "/events/"+recent.ID+"/resend", url.Values{"csrf": {csrf}, "endpoint_id": {"ep_b"}})
		if code != http.StatusSeeOther || hdr.Get("Location") != "/events/"+recent.ID {
			t.Fatalf("resend: %d to %q", code, hdr.Get("Location"))
		}
		for _, d := range f.deliveries(recent.ID) {
			want := map[string]string{"ep_a": store.StatusFailed, "ep_b": store.StatusPending}[d.EndpointID]
			if d.Status != want {
				t.Errorf("after resend to ep_b: delivery to %s %s, want %s", d.EndpointID, d.Status, want)
			}
		}
		_, _, page := f.do(c, "GET", "/events/"+recent.ID, nil)
		if !strings.Contains(page, "1 deliveries scheduled again") {
			t.Errorf("the event page shows no message:\n%s", page)
		}
		f.do(c, "POST", "/events/"+recent.ID+"/resend", url.Values{"csrf": {csrf}})
		for _, d := range f.deliveries(recent.ID) {
			if d.Status != store.StatusPending {
				t.Errorf("after resend: delivery to %s %s, want pending", d.EndpointID, d.Status)
			}
		}
		if code, _, _ := f.do(c, "POST", "/events/evt_none/resend", url.Values{"csrf": {csrf}}); code != http.StatusNotFound {
			t.Errorf("resend of a missing event: %d, want 404", code)
		}
	})

	t.Run("recover", func(t *testing.T) {
		f.failAll() // the deliveries resent above fail again
		// A range holding only the old event, for ep_a only.
		since := old.Created.Add(-time.Minute).UTC().Format("2006-01-02T15:04")
		until := old.Created.Add(time.Hour).UTC().Format("2006-01-02T15:04")
		code, _, _ := f.do(c, "POST", "/endpoints/ep_a/recover", url.Values{"csrf": {csrf}, "since": {since}, "until": {until}})
		if code != http.StatusSeeOther {
			t.Fatalf("recover: %d", code)
		}
		for _, d := range f.deliveries(old.ID) {
			want := map[string]string{"ep_a": store.StatusPending, "ep_b": store.StatusFailed}[d.EndpointID]
			if d.Status != want {
				t.Errorf("after recover of ep_a: delivery to %s %s, want %s", d.EndpointID, d.Status, want)
			}
		}
		for _, d := range f.deliveries(recent.ID) {
			if d.Status != store.StatusFailed {
				t.Errorf("after recover of an earlier range: the recent event's delivery to %s %s, want failed", d.EndpointID, d.Status)
			}
		}
		if _, _, page := f.do(c, "GET", "/endpoints/ep_a", nil); !strings.Contains(page, "1 failed deliveries to ep_a") {
			t.Errorf("the endpoint page shows no message:\n%s", page)
		}
		for _, form := range []url.Values{{"since": {"yesterday"}}, {"since": {until}, "until": {since}}} {
			form.Set("csrf", csrf)
			if code, _, _ := f.do(c, "POST", "/endpoints/ep_a/recover", form); code != http.StatusBadRequest {
				t.Errorf("recover with %v: %d, want 400", form, code)
			}
		}
	})
}

func TestPagesShowHealthAndAttempts(t *testing.T) {
	f := newFixture(t)
	f.endpoint("ep_a", `<script>alert("x")</script>`)
	ev := f.event("order.<b>created</b>", time.Now())
	f.failAll()
	c := f.client()
	f.login(c)
	_, _, page := f.do(c, "GET", "/", nil)
	for _, want := range []string{"ep_a", "failing", "0% of 1", "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("the endpoints page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<script>") {
		t.Error("the endpoints page holds an unescaped <script>")
	}
	_, _, page = f.do(c, "GET", "/events", nil)
	for _, want := range []string{ev.ID, "order.&lt;b&gt;created&lt;/b&gt;", "500 in 3.0 ms", "failed"} {
		if !strings.Contains(page, want) {
			t.Errorf("the events page lacks %q:\n%s", want, page)
		}
	}
	_, _, page = f.do(c, "GET", "/events/"+ev.ID, nil)
	for _, want := range []string{"&#34;n&#34;: 1", "&lt;b&gt;boom&lt;/b&gt;", "500"} {
		if !strings.Contains(page, want) {
			t.Errorf("the event page lacks %q:\n%s", want, page)
		}
	}
	if code, _, _ := f.do(c, "GET", "/events/evt_none", nil); code != http.StatusNotFound {
		t.Errorf("GET a missing event: %d, want 404", code)
	}
	// The API is still served beside the console.
	if code, _, _ := f.do(c, "GET", "/v1/endpoints", nil, "Authorization", "Bearer "+f.token); code != http.StatusOK {
		t.Errorf("GET /v1/endpoints through console.Handler: %d", code)
	}
}

// TestPagesRedactURLUserinfo: an endpoint URL's userinfo (a basic-auth
// password, a token as the user name) is shown as xxxxx on the endpoints
// page and the endpoint's page.
func TestPagesRedactURLUserinfo(t *testing.T) {
	f := newFixture(t)
	e := f.endpoint("ep_a", "")
	e.URL = "https://alice:pw-in-url@hooks.example/in"
	if err := f.st.UpdateEndpoint(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	c := f.client()
	f.login(c)
	for _, path := range []string{"/", "/endpoints/ep_a"} {
		_, _, page := f.do(c, "GET", path, nil)
		if strings.Contains(page, "pw-in-url") || strings.Contains(page, "alice") || !strings.Contains(page, "https://xxxxx@hooks.example/in") {
			t.Errorf("GET %s: want the URL with userinfo xxxxx:\n%s", path, page)
		}
	}
}

func TestConfig(t *testing.T) {
	var ce *console.ConfigError
	if _, err := console.New(console.Config{}); !errors.As(err, &ce) || ce.Field != "Store" || !errors.Is(err, console.ErrBadConfig) {
		t.Errorf("New without a Store: %v, want a ConfigError on Store", err)
	}
}

// TestSessionsBoundedAndExpire: logins beyond MaxSessions end the oldest
// session, and a session ends after SessionTTL.
func TestSessionsBoundedAndExpire(t *testing.T) {
	f := newFixture(t)
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	con, err := console.New(console.Config{Store: f.st, MaxSessions: 2, SessionTTL: time.Hour, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	f.srv.Config.Handler = con
	var clients []*http.Client
	for range 3 {
		c := f.client()
		f.login(c)
		clients = append(clients, c)
		now.Add(int64(time.Second))
	}
	if con.Sessions() != 2 {
		t.Errorf("%d sessions held, want at most 2", con.Sessions())
	}
	for i, c := range clients {
		code, _, _ := f.do(c, "GET", "/", nil)
		if want := map[bool]int{true: http.StatusSeeOther, false: http.StatusOK}[i == 0]; code != want {
			t.Errorf("client %d (oldest first): GET / %d, want %d", i, code, want)
		}
	}
	now.Add(int64(time.Hour))
	if code, _, _ := f.do(clients[2], "GET", "/", nil); code != http.StatusSeeOther {
		t.Errorf("GET / after SessionTTL: %d, want 303 to /login", code)
	}
}
