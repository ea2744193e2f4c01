package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook"
	"github.com/brokerless/brokerless/webhook/dispatch"
	"github.com/brokerless/brokerless/webhook/store"
)

var loopback = webhook.AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

type fixture struct {
	t     *testing.T
	st    store.Store
	srv   *Server
	http  *httptest.Server
	token string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureOn(t, "sqlite:"+filepath.Join(t.TempDir(), "webhook.db"))
}

// newFixtureOn is newFixture on the store at dsn.
func newFixtureOn(t *testing.T, dsn string) *fixture {
	t.Helper()
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv, err := New(Config{Store: st, Addresses: loopback, MaxBodyBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := EnsureAdminToken(context.Background(), st, time.Now(), nil)
	if err != nil || tok == "" {
		t.Fatalf("no admin token at first start: %v", err)
	}
	if again, err := EnsureAdminToken(context.Background(), st, time.Now(), nil); again != "" || err != nil {
		t.Fatalf("a second admin token at the second start: %q %v", again, err)
	}
	h := httptest.NewServer(srv)
	t.Cleanup(h.Close)
	return &fixture{t: t, st: st, srv: srv, http: h, token: tok}
}

// do sends a request with the admin token and returns the status and body.
func (f *fixture) do(method, path, body string, header ...string) (int, []byte) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.http.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (f *fixture) must(want int, method, path, body string, out any) {
	f.t.Helper()
	code, b := f.do(method, path, body)
	if code != want {
		f.t.Fatalf("%s %s: %d %s, want %d", method, path, code, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			f.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// nothingStored fails the test if the store holds any event or endpoint.
func (f *fixture) nothingStored() {
	f.t.Helper()
	evs, _ := f.st.ListEvents(context.Background(), time.Time{}, "", 10)
	eps, _ := f.st.ListEndpoints(context.Background())
	if len(evs) > 0 || len(eps) > 0 {
		f.t.Fatalf("stored %d events and %d endpoints", len(evs), len(eps))
	}
}

// TestAccessAndBadInput: no token, a wrong or revoked token, malformed
// JSON, unknown fields, invalid values and oversized bodies each get a
// clear 4xx, and nothing is stored.
func TestAccessAndBadInput(t *testing.T) {
	f := newFixture(t)
	event := `{"type":"t","data":{}}`
	for _, tc := range []struct {
		name, auth, path, body string
		code                   int
		msg                    string
	}{
		{"no token", "", "/v1/events", event, 401, "missing bearer token"},
		{"wrong token", "Bearer bwt_wrong", "/v1/events", event, 401, "invalid or revoked"},
		{"not bearer", "Basic YTpi", "/v1/events", event, 401, "not a bearer token"},
		{"malformed JSON", "ok", "/v1/events", `{"type":"t",`, 400, "malformed JSON"},
		{"two objects", "ok", "/v1/events", event + event, 400, "more after the object"},
		{"empty body", "ok", "/v1/events", ``, 400, "empty body"},
		{"unknown field", "ok", "/v1/events", `{"type":"t","data":{},"extra":1}`, 400, "unknown field"},
		{"no type", "ok", "/v1/events", `{"data":{}}`, 400, "type"},
		{"null data", "ok", "/v1/events", `{"type":"t","data":null}`, 400, "data"},
		{"data not UTF-8", "ok", "/v1/events", "{\"type\":\"t\",\"data\":{\"name\":\"caf\xe9\"}}", 400, "data: not valid UTF-8"},
		{"type with NUL", "ok", "/v1/events", `{"type":"t\u0000","data":{}}`, 400, "type: want valid UTF-8 without NUL"},
		{"type too long", "ok", "/v1/events", `{"type":"` + strings.Repeat("t", 257) + `","data":{}}`, 400, "type: want 1 to 256 bytes"},
		{"idempotency key with NUL", "ok", "/v1/events", `{"type":"t","data":{},"idempotency_key":"k\u0000"}`, 400, "idempotency_key: want valid UTF-8 without NUL"},
		{"reserved idempotency key", "ok", "/v1/events", `{"type":"t","data":{},"idempotency_key":"brokerless:source:orders/0/1"}`, 400, "idempotency_key: the prefix \"brokerless:\" is reserved"},
		{"oversized", "ok", "/v1/events", `{"type":"t","data":"` + strings.Repeat("x", 5000) + `"}`, 413, "larger than 4096"},
		{"endpoint without url", "ok", "/v1/endpoints", `{}`, 400, "url: required"},
		{"blocked url", "ok", "/v1/endpoints", `{"url":"http://10.0.0.1/"}`, 400, "url"},
		{"bad scheme", "ok", "/v1/endpoints", `{"url":"ftp://127.0.0.1/"}`, 400, "url"},
		{"bad secret", "ok", "/v1/endpoints", `{"url":"http://127.0.0.1/","secret":"nope"}`, 400, "secret"},
		{"negative rate", "ok", "/v1/endpoints", `{"url":"http://127.0.0.1/","rate_limit":-1}`, 400, "rate_limit"},
		{"oversized endpoint", "ok", "/v1/endpoints", `{"url":"http://127.0.0.1/` + strings.Repeat("x", 5000) + `"}`, 413, "larger than"},
	} {
		req, _ := http.NewRequest("POST", f.http.URL+tc.path, strings.NewReader(tc.body))
		switch tc.auth {
		case "ok":
			req.Header.Set("Authorization", "Bearer "+f.token)
		case "":
		default:
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct{ Error string }
		if resp.StatusCode != tc.code || json.Unmarshal(b, &e) != nil || !strings.Contains(e.Error, tc.msg) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, resp.StatusCode, b, tc.code, tc.msg)
		}
		if tc.code == 401 && resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate", tc.name)
		}
	}
	// Header values are bytes: a key not valid UTF-8 (refused by
	// PostgreSQL's TEXT column) is refused with the reason.
	if code, b := f.do("POST", "/v1/events", event, "Idempotency-Key", "k\xff"); code != 400 || !strings.Contains(string(b), "Idempotency-Key: want valid UTF-8") {
		t.Errorf("Idempotency-Key not valid UTF-8: %d %s, want 400", code, b)
	}
	// The source's keys are out of clients' reach, by header too.
	if code, b := f.do("POST", "/v1/events", event, "Idempotency-Key", "brokerless:x"); code != 400 || !strings.Contains(string(b), "reserved") {
		t.Errorf("reserved Idempotency-Key: %d %s, want 400", code, b)
	}
	f.nothingStored()
	// A revoked token is refused too.
	var tok tokenOut
	f.must(201, "POST", "/v1/tokens", `{"name":"ci"}`, &tok)
	f.must(204, "DELETE", "/v1/tokens/"+tok.ID, "", nil)
	admin := f.token
	f.token = tok.Token
	if code, b := f.do("POST", "/v1/events", event); code != 401 {
		t.Errorf("revoked token: %d %s", code, b)
	}
	f.token = admin
	f.nothingStored()
	if code, _ := f.do("GET", "/v1/nothing", ""); code != 404 {
		t.Errorf("unknown route: %d", code)
	}
}

// TestEndpointsAndEvents walks the API: endpoints CRUD, an event with an
// idempotency key, its deliveries and attempts, resend, recover and
// secret rotation, with a dispatcher delivering to a test receiver.
func TestEndpointsAndEvents(t *testing.T) {
	f := newFixture(t)
	codes := make(chan int, 100)
	var (
		got    []http.Header
		bodies [][]byte
	)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Clone())
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, b)
		w.WriteHeader(<-codes)
		io.WriteString(w, "thanks")
	}))
	defer rcv.Close()
	var ep struct {
		endpointOut
		Secret string
	}
	f.must(201, "POST", "/v1/endpoints", `{"url":"`+rcv.URL+`","event_types":["invoice.*"],"description":"billing"}`, &ep)
	if !strings.HasPrefix(ep.ID, "ep_") || !strings.HasPrefix(ep.Secret, "whsec_") || !ep.Enabled || ep.Description != "billing" {
		t.Fatalf("created %+v", ep)
	}
	var list struct{ Data []endpointOut }
	f.must(200, "GET", "/v1/endpoints", "", &list)
	if len(list.Data) != 1 || list.Data[0].ID != ep.ID {
		t.Fatalf("list %+v", list)
	}
	var ev eventOut
	f.must(202, "POST", "/v1/events", `{"type":"invoice.paid","data":{"amount":5},"idempotency_key":"k1"}`, &ev)
	var again eventOut
	f.must(200, "POST", "/v1/events", `{"type":"invoice.paid","data":{"amount":6},"idempotency_key":"k1"}`, &again)
	if again.ID != ev.ID || !bytes.Contains(again.Payload, []byte(`"amount":5`)) {
		t.Fatalf("replay with the same key: %+v, want %+v", again, ev)
	}
	if code, _ := f.do("POST", "/v1/events", `{"type":"invoice.paid","data":1,"idempotency_key":"a"}`, "Idempotency-Key", "b"); code != 400 {
		t.Errorf("conflicting keys: %d", code)
	}
	// The dispatcher: first attempt 500, then the resend succeeds.
	now := time.Now()
	d, err := dispatch.New(dispatch.Config{Store: f.st, Addresses: loopback})
	if err != nil {
		t.Fatal(err)
	}
	codes <- 500
	if n, err := d.DeliverDue(context.Background()); n != 1 || err != nil {
		t.Fatalf("DeliverDue %d %v", n, err)
	}
	var ds struct{ Data []deliveryOut }
	f.must(200, "GET", "/v1/events/"+ev.ID+"/deliveries", "", &ds)
	if len(ds.Data) != 1 || ds.Data[0].Status != "pending" || len(ds.Data[0].Attempts) != 1 || ds.Data[0].Attempts[0].StatusCode != 500 ||
		ds.Data[0].Attempts[0].Response != "thanks" || ds.Data[0].NextAttempt == nil {
		t.Fatalf("deliveries %+v", ds)
	}
	f.must(202, "POST", "/v1/events/"+ev.ID+"/resend", "", nil)
	codes <- 200
	if n, _ := d.DeliverDue(context.Background()); n != 1 {
		t.Fatalf("resend made %d attempts", n)
	}
	f.must(200, "GET", "/v1/events/"+ev.ID+"/deliveries", "", &ds)
	if ds.Data[0].Status != "succeeded" || len(ds.Data[0].Attempts) != 2 {
		t.Fatalf("after resend %+v", ds)
	}
	if got[0].Get("webhook-id") != ev.ID || got[1].Get("webhook-id") != ev.ID {
		t.Errorf("webhook-ids %s %s, want %s", got[0].Get("webhook-id"), got[1].Get("webhook-id"), ev.ID)
	}
	// Rotation: both secrets sign during the grace period.
	var sec secretOut
	f.must(200, "POST", "/v1/endpoints/"+ep.ID+"/secret/rotate", `{"grace_seconds":3600}`, &sec)
	if sec.Secret == ep.Secret || len(sec.Previous) != 1 || sec.Previous[0].Secret != ep.Secret {
		t.Fatalf("rotated %+v", sec)
	}
	// Recover: a failed delivery in the window is scheduled again.
	f.must(202, "POST", "/v1/events", `{"type":"invoice.void","data":{}}`, nil)
	codes <- 500
	d2, _ := dispatch.New(dispatch.Config{Store: f.st, Addresses: loopback,
		Policy: dispatch.Policy{Schedule: []time.Duration{0}}})
	if n, _ := d2.DeliverDue(context.Background()); n != 1 {
		t.Fatalf("made %d attempts", n)
	}
	var rec map[string]int
	f.must(202, "POST", "/v1/endpoints/"+ep.ID+"/recover", `{"since":"`+now.Add(-time.Hour).Format(time.RFC3339)+`"}`, &rec)
	if rec["recovered"] != 1 {
		t.Fatalf("recover %v", rec)
	}
	codes <- 200
	if n, _ := d2.DeliverDue(context.Background()); n != 1 {
		t.Fatalf("recovered delivery: %d attempts", n)
	}
	// During the grace period the old and the new secret each verify.
	for _, s := range []string{sec.Secret, ep.Secret} {
		ps, _ := webhook.ParseSecret(s)
		v := &webhook.Verifier{Secrets: []webhook.Secret{ps}}
		if err := v.Verify(got[3], bodies[3]); err != nil {
			t.Errorf("after rotation, secret %s does not verify: %v", s[:10], err)
		}
	}
	if sigs := strings.Fields(got[3].Get("webhook-signature")); len(sigs) != 2 {
		t.Errorf("after rotation the signature has %d entries, want 2 (new and old secret)", len(sigs))
	}
	// Update and disable, then delete.
	var upd endpointOut
	f.must(200, "PATCH", "/v1/endpoints/"+ep.ID, `{"enabled":false,"rate_limit":3}`, &upd)
	if upd.Enabled || upd.RateLimit != 3 || upd.DisabledReason == "" {
		t.Fatalf("updated %+v", upd)
	}
	var re endpointOut
	f.must(200, "PATCH", "/v1/endpoints/"+ep.ID, `{"enabled":true}`, &re)
	if !re.Enabled || re.DisabledReason != "" {
		t.Fatalf("re-enabled %+v", re)
	}
	var evs struct{ Data []eventOut }
	f.must(200, "GET", "/v1/events?limit=1", "", &evs)
	if len(evs.Data) != 1 || evs.Data[0].Type != "invoice.void" {
		t.Fatalf("events %+v", evs)
	}
	f.must(204, "DELETE", "/v1/endpoints/"+ep.ID, "", nil)
	f.must(404, "GET", "/v1/endpoints/"+ep.ID, "", nil)
	f.must(404, "GET", "/v1/events/msg_none", "", nil)
	f.must(404, "POST", "/v1/events/msg_none/resend", "", nil)
}

// TestOpenAPI: the served document is an OpenAPI 3 document naming
// every route of the server and nothing else, each operation with its
// responses, every $ref resolving.
// TestRotationKeepsFewSecrets: many rotations within the grace period
// keep at most store.MaxSecrets signing (the current one and the newest
// previous ones, the oldest expired), so an attempt's webhook-signature
// stays within what a Verifier accepts, and the newest secret alone
// verifies it.
func TestRotationKeepsFewSecrets(t *testing.T) {
	f := newFixture(t)
	var ep struct{ ID, Secret string }
	f.must(http.StatusCreated, "POST", "/v1/endpoints", `{"url":"http://127.0.0.1:9/hooks"}`, &ep)
	all := []string{ep.Secret}
	var sec secretOut
	for range 40 {
		f.must(http.StatusOK, "POST", "/v1/endpoints/"+ep.ID+"/secret/rotate", `{}`, &sec)
		all = append(all, sec.Secret)
	}
	var prev []string
	for _, p := range sec.Previous {
		prev = append(prev, p.Secret)
	}
	if want := all[len(all)-store.MaxSecrets : len(all)-1]; !slices.Equal(prev, want) {
		t.Errorf("previous secrets after 40 rotations: %d, want the %d newest", len(prev), len(want))
	}
	e, err := f.st.GetEndpoint(context.Background(), ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	active := e.Active(now)
	if !slices.Equal(active, all[len(all)-store.MaxSecrets:]) {
		t.Fatalf("%d secrets sign, want the %d newest", len(active), store.MaxSecrets)
	}
	var secrets []webhook.Secret
	for _, s := range active {
		ps, _ := webhook.ParseSecret(s)
		secrets = append(secrets, ps)
	}
	body := []byte(`{"type":"t","data":{}}`)
	h := http.Header{}
	webhook.SetHeaders(h, "msg_1", now, body, secrets...)
	newest, _ := webhook.ParseSecret(sec.Secret)
	if err := (&webhook.Verifier{Secrets: []webhook.Secret{newest}}).Verify(h, body); err != nil {
		t.Errorf("the newest secret does not verify an attempt signed by the active secrets: %v", err)
	}
}

func TestOpenAPI(t *testing.T) {
	f := newFixture(t)
	req, _ := http.NewRequest("GET", f.http.URL+"/v1/openapi.json", nil) // no token needed
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct{ Title, Version string }
		Paths   map[string]map[string]struct {
			OperationID string         `json:"operationId"`
			Responses   map[string]any `json:"responses"`
		}
		Components struct{ Schemas map[string]any }
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") || doc.Info.Title == "" || doc.Info.Version == "" {
		t.Fatalf("not an OpenAPI 3 document: %q %+v", doc.OpenAPI, doc.Info)
	}
	var documented []string
	ids := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
			if len(op.Responses) == 0 || op.OperationID == "" || ids[op.OperationID] {
				t.Errorf("%s %s: operationId %q, %d responses", method, path, op.OperationID, len(op.Responses))
			}
			ids[op.OperationID] = true
		}
	}
	routes := f.srv.Routes()
	slices.Sort(documented)
	slices.Sort(routes)
	if !slices.Equal(documented, routes) {
		t.Errorf("documented %v\nserved     %v", documented, routes)
	}
	for _, m := range refPattern.FindAllSubmatch(raw, -1) {
		if _, ok := doc.Components.Schemas[string(m[1])]; !ok {
			t.Errorf("$ref to missing schema %s", m[1])
		}
	}
	if !bytes.Equal(bytes.TrimSpace(OpenAPI()), bytes.TrimSpace(openAPIDocument)) {
		t.Error("OpenAPI() differs from the served document")
	}
}

var refPattern = regexp.MustCompile(`"\$ref": "#/components/schemas/([A-Za-z]+)"`)
