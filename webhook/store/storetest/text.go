package storetest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// testAttemptText: an attempt's error with NUL bytes and bytes that are
// not UTF-8 is stored (alone, and in a batch, which PostgreSQL writes in
// bulk) with each replaced by U+FFFD, the same in every store, as is an
// endpoint's disabled reason; its response, bytes, is kept as it came.
func testAttemptText(t *testing.T, s store.Store) {
	c := ctx(t)
	endpoint(t, s, "ep_1")
	for i := range 3 {
		event(t, s, fmt.Sprint("msg_", i), "t", t0)
	}
	jobs := claim(t, s, "a", t0, 10)
	if len(jobs) != 3 {
		t.Fatalf("claimed %d, want 3", len(jobs))
	}
	const bad, clean = "read tcp: \x00reset\xff\xfe by peer\x00", "read tcp: \uFFFDreset\uFFFD by peer\uFFFD"
	response := []byte("\x00\xff{\"ok\":false}\xc3")
	var cs []*store.Completion
	for i, j := range jobs {
		cs = append(cs, &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: store.StatusPending, NextAttempt: t0.Add(time.Minute),
			Attempt: store.Attempt{ID: fmt.Sprint("atmpt_", i), DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: "ep_1", Started: t0,
				StatusCode: 502 * (i % 2), Error: bad, Response: response}})
	}
	cs[2].Status, cs[2].Disable = store.StatusFailed, "gone: "+bad
	for _, batch := range [][]*store.Completion{cs[:2], cs[2:]} {
		if err := s.Complete(c, batch...); err != nil {
			t.Fatalf("completions with NUL and non-UTF-8 text: %v", err)
		}
	}
	for _, j := range jobs {
		as, err := s.ListAttempts(c, j.Event.ID)
		if err != nil || len(as) != 1 {
			t.Fatalf("attempts of %s: %+v %v", j.Event.ID, as, err)
		}
		if as[0].Error != clean || !bytes.Equal(as[0].Response, response) {
			t.Errorf("attempt stored with error %q, response %q; want %q, %q", as[0].Error, as[0].Response, clean, response)
		}
	}
	if e, err := s.GetEndpoint(c, "ep_1"); err != nil || e.DisabledReason != "gone: "+clean {
		t.Errorf("endpoint disabled with reason %q (%v), want %q", e.DisabledReason, err, "gone: "+clean)
	}
}
