package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// hookStore runs hook once, right after the next GetEndpoint, or right
// before the next ChangeEndpoint: another writer's change landing after
// an API handler read the endpoint, or just before its read-modify-write.
type hookStore struct {
	store.Store
	mu   sync.Mutex
	hook func()
}

func (h *hookStore) runHook() {
	h.mu.Lock()
	hook := h.hook
	h.hook = nil
	h.mu.Unlock()
	if hook != nil {
		hook()
	}
}

func (h *hookStore) GetEndpoint(ctx context.Context, id string) (*store.Endpoint, error) {
	e, err := h.Store.GetEndpoint(ctx, id)
	h.runHook()
	return e, err
}

func (h *hookStore) ChangeEndpoint(ctx context.Context, id string, f func(e *store.Endpoint) error) (*store.Endpoint, error) {
	h.runHook()
	return h.Store.ChangeEndpoint(ctx, id, f)
}

// serve sends a request with f's token to srv and returns the status and body.
func (f *fixture) serve(srv *Server, method, path, body string) (int, []byte) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.token)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	return w.Code, w.Body.Bytes()
}

// TestUpdateKeepsConcurrentWrites: a PATCH or a secret rotation reads the
// endpoint, changes it and writes it back. A write landing in between (the
// dispatcher disabling the endpoint after a 410 Gone, another rotation) is
// kept: the PATCH of a description does not enable the endpoint again, and
// the secret each rotation answered with still signs.
func TestUpdateKeepsConcurrentWrites(t *testing.T) {
	f := newFixture(t)
	hs := &hookStore{Store: f.st}
	srv, err := New(Config{Store: hs, Addresses: loopback, MaxBodyBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	c := context.Background()
	var ep struct{ ID, Secret string }
	f.must(http.StatusCreated, "POST", "/v1/endpoints", `{"url":"http://127.0.0.1:9/hooks"}`, &ep)
	f.must(http.StatusAccepted, "POST", "/v1/events", `{"type":"t","data":{}}`, nil)

	t.Run("disabled by the dispatcher during a PATCH", func(t *testing.T) {
		now := time.Now()
		jobs, err := f.st.Claim(c, store.ClaimRequest{Owner: "d", Now: now, Lease: time.Minute, Limit: 10})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim: %d jobs, %v", len(jobs), err)
		}
		j := jobs[0]
		hs.hook = func() {
			err := f.st.Complete(c, &store.Completion{Owner: "d", LeaseUntil: j.LeaseUntil, Status: store.StatusFailed, Disable: "the endpoint answered 410 Gone",
				Attempt: store.Attempt{ID: "atmpt_1", DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: j.Endpoint.ID, Started: now, StatusCode: 410}})
			if err != nil {
				t.Errorf("complete: %v", err)
			}
		}
		if code, b := f.serve(srv, "PATCH", "/v1/endpoints/"+ep.ID, `{"description":"billing"}`); code != http.StatusOK {
			t.Fatalf("PATCH: %d %s", code, b)
		}
		e, err := f.st.GetEndpoint(c, ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		if e.Enabled || e.DisabledReason == "" || e.Description != "billing" {
			t.Errorf("after a PATCH of its description racing the dispatcher disabling it: enabled %v, reason %q, description %q; want disabled (410 Gone), billing",
				e.Enabled, e.DisabledReason, e.Description)
		}
	})

	t.Run("two rotations at once", func(t *testing.T) {
		var second secretOut
		hs.hook = func() {
			code, b := f.serve(srv, "POST", "/v1/endpoints/"+ep.ID+"/secret/rotate", `{}`)
			if code != http.StatusOK || json.Unmarshal(b, &second) != nil {
				t.Errorf("second rotation: %d %s", code, b)
			}
		}
		code, b := f.serve(srv, "POST", "/v1/endpoints/"+ep.ID+"/secret/rotate", `{}`)
		var first secretOut
		if code != http.StatusOK || json.Unmarshal(b, &first) != nil {
			t.Fatalf("first rotation: %d %s", code, b)
		}
		e, err := f.st.GetEndpoint(c, ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		active := e.Active(time.Now())
		for i, s := range []string{first.Secret, second.Secret} {
			if !slices.Contains(active, s) {
				t.Errorf("the secret rotation %d of 2 answered with does not sign (%d secrets do)", i+1, len(active))
			}
		}
	})
}
