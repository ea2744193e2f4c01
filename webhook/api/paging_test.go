package api

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/dispatch"
)

// TestListEventsPaging: GET /v1/events pages, each asked with before and
// before_id (the created_at and id of the last event of the page before),
// list every event once, also when many share one creation time; a
// before_id without before is refused.
func TestListEventsPaging(t *testing.T) {
	f := newFixture(t)
	at := time.Now().Add(-time.Minute)
	const events = 7
	for range events {
		if _, err := f.st.InsertEvent(context.Background(), dispatch.NewEvent("t", json.RawMessage(`{}`), "", at)); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	q := url.Values{"limit": {"3"}}
	for range 10 {
		var page struct{ Data []eventOut }
		f.must(200, "GET", "/v1/events?"+q.Encode(), "", &page)
		if len(page.Data) == 0 {
			break
		}
		for _, ev := range page.Data {
			if seen[ev.ID] {
				t.Errorf("event %s listed twice", ev.ID)
			}
			seen[ev.ID] = true
		}
		last := page.Data[len(page.Data)-1]
		q.Set("before", last.CreatedAt.Format(time.RFC3339Nano))
		q.Set("before_id", last.ID)
	}
	if len(seen) != events {
		t.Fatalf("pages listed %d of %d events created at one time", len(seen), events)
	}
	if code, _ := f.do("GET", "/v1/events?before_id=msg_1", ""); code != 400 {
		t.Errorf("before_id without before: %d, want 400", code)
	}
}
