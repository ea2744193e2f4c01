package api

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brokerless/brokerless/webhook/store/pgtest"
)

// TestTextFieldsSQLite and TestTextFieldsPostgres: every string the API
// is given to store or look up (JSON fields, the Idempotency-Key header,
// ids in the path, query parameters) holding a NUL or bytes not UTF-8 is
// refused with 400 naming the field, where PostgreSQL's TEXT refused it
// and the API answered 500; nothing is stored.
func TestTextFieldsSQLite(t *testing.T) {
	testTextFields(t, newFixtureOn(t, "sqlite:"+filepath.Join(t.TempDir(), "webhook.db")))
}

func TestTextFieldsPostgres(t *testing.T) {
	testTextFields(t, newFixtureOn(t, pgtest.Start(t, "fsync=off").NewDatabase(t)))
}

func testTextFields(t *testing.T, f *fixture) {
	var ep endpointOut
	f.must(201, "POST", "/v1/endpoints", `{"url":"http://127.0.0.1:1/ok"}`, &ep)
	var ev eventOut
	f.must(202, "POST", "/v1/events", `{"type":"t","data":{}}`, &ev)
	const want = "want valid UTF-8 without NUL"
	for _, tc := range []struct {
		name, method, path, body, field string
		header                          []string
	}{
		{"endpoint description", "POST", "/v1/endpoints", `{"url":"http://127.0.0.1:1/","description":"a\u0000b"}`, "description", nil},
		{"endpoint event type", "POST", "/v1/endpoints", `{"url":"http://127.0.0.1:1/","event_types":["ok","a\u0000"]}`, "event_types[1]", nil},
		{"endpoint url", "POST", "/v1/endpoints", `{"url":"http://127.0.0.1:1/\u0000"}`, "url", nil},
		{"endpoint secret", "POST", "/v1/endpoints", `{"url":"http://127.0.0.1:1/","secret":"whsec_\u0000"}`, "secret", nil},
		{"endpoint description changed", "PATCH", "/v1/endpoints/" + ep.ID, `{"description":"\u0000"}`, "description", nil},
		{"endpoint event types changed", "PATCH", "/v1/endpoints/" + ep.ID, `{"event_types":["\u0000"]}`, "event_types[0]", nil},
		{"endpoint id", "GET", "/v1/endpoints/ep%00", "", "id", nil},
		{"endpoint id not UTF-8", "DELETE", "/v1/endpoints/ep%FF", "", "id", nil},
		{"endpoint id, secret", "GET", "/v1/endpoints/ep%00/secret", "", "id", nil},
		{"endpoint id, recover", "POST", "/v1/endpoints/ep%00/recover", `{"since":"2026-01-01T00:00:00Z"}`, "id", nil},
		{"event type", "POST", "/v1/events", `{"type":"t\u0000","data":{}}`, "type", nil},
		{"idempotency key", "POST", "/v1/events", `{"type":"t","data":{},"idempotency_key":"k\u0000"}`, "idempotency_key", nil},
		{"idempotency key header", "POST", "/v1/events", `{"type":"t","data":{}}`, "Idempotency-Key", []string{"Idempotency-Key", "k\xff"}},
		{"event id", "GET", "/v1/events/msg%00", "", "id", nil},
		{"event id, deliveries", "GET", "/v1/events/msg%FF/deliveries", "", "id", nil},
		{"event id, resend", "POST", "/v1/events/msg%00/resend", "", "id", nil},
		{"resend endpoint", "POST", "/v1/events/" + ev.ID + "/resend", `{"endpoint_id":"ep\u0000"}`, "endpoint_id", nil},
		{"events query", "GET", "/v1/events?before=%00", "", "before", nil},
		{"token name", "POST", "/v1/tokens", `{"name":"ci\u0000"}`, "name", nil},
		{"token id", "DELETE", "/v1/tokens/tok%00", "", "id", nil},
	} {
		code, b := f.do(tc.method, tc.path, tc.body, tc.header...)
		var e struct{ Error string }
		if code != 400 || json.Unmarshal(b, &e) != nil || !strings.HasPrefix(e.Error, tc.field+": ") || !strings.Contains(e.Error, want) {
			t.Errorf("%s: %d %s, want 400 with %q", tc.name, code, b, tc.field+": "+want)
		}
	}
	var list struct{ Data []endpointOut }
	f.must(200, "GET", "/v1/endpoints", "", &list)
	if len(list.Data) != 1 || list.Data[0].Description != "" || len(list.Data[0].EventTypes) != 0 {
		t.Errorf("endpoints %+v, want the first alone, unchanged", list.Data)
	}
}
