package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// flipStore writes an endpoint's health (its failing since set or
// cleared, as completions do, raising its revision) right after every
// read of it: an endpoint whose attempts fail and succeed in turn, many
// times a second.
type flipStore struct {
	store.Store
	since time.Time
}

func (s *flipStore) flip(ctx context.Context, id string) {
	e, err := s.Store.GetEndpoint(ctx, id)
	if err != nil {
		return
	}
	if e.FailingSince.IsZero() {
		s.since = time.Unix(1_800_000_000, 0)
	} else {
		s.since = time.Time{}
	}
	e.FailingSince, e.Revision = s.since, 0
	_ = s.Store.UpdateEndpoint(ctx, e)
}

func (s *flipStore) GetEndpoint(ctx context.Context, id string) (*store.Endpoint, error) {
	e, err := s.Store.GetEndpoint(ctx, id)
	s.flip(ctx, id)
	return e, err
}

func (s *flipStore) ChangeEndpoint(ctx context.Context, id string, f func(e *store.Endpoint) error) (*store.Endpoint, error) {
	s.flip(ctx, id)
	return s.Store.ChangeEndpoint(ctx, id, f)
}

// TestUpdateDuringHealthFlips: a PATCH of an endpoint whose health
// changes right after every read of it, and before every change, is
// written (it gave up with 409 after 8 reads), and keeps the health last
// written.
func TestUpdateDuringHealthFlips(t *testing.T) {
	f := newFixture(t)
	fs := &flipStore{Store: f.st}
	srv, err := New(Config{Store: fs, Addresses: loopback, MaxBodyBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	var ep struct{ ID string }
	f.must(http.StatusCreated, "POST", "/v1/endpoints", `{"url":"http://127.0.0.1:9/hooks"}`, &ep)
	if code, b := f.serve(srv, "PATCH", "/v1/endpoints/"+ep.ID, `{"description":"billing"}`); code != http.StatusOK {
		t.Fatalf("PATCH: %d %s", code, b)
	}
	e, err := f.st.GetEndpoint(context.Background(), ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if e.Description != "billing" || !e.FailingSince.Equal(fs.since) {
		t.Errorf("after the PATCH: description %q, failing since %v; want billing, %v (the last health written)", e.Description, e.FailingSince, fs.since)
	}
}
