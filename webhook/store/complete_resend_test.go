package store

import (
	"context"
	"testing"
	"time"
)

// TestCompleteDuringResend: a dispatcher's completions of both
// deliveries of an event (to two endpoints) in one batch, and a user's
// resend of the event at once, both succeed: neither is killed as a
// deadlock (40P01). The resend locks the event's deliveries in id order;
// the batch was recorded in its endpoints' id order (row by row) or in
// the order the bulk statement's join came to them: the higher delivery
// id first. The ids are set here, the higher to one endpoint, then to
// the other; a third transaction holds the higher while the
// completions, then the resend, wait for it. Run with the bulk
// statement and row by row.
func TestCompleteDuringResend(t *testing.T) {
	for _, bulk := range []bool{true, false} {
		for _, higher := range []string{"ep_a", "ep_b"} {
			completeDuringResend(t, bulk, higher)
		}
	}
}

func completeDuringResend(t *testing.T, bulk bool, higher string) {
	ctx := context.Background()
	s, t0 := pgStoreAB(t, []string{"msg_1"}, "fsync=off", "deadlock_timeout=100ms")
	s.d.bulk = bulk
	jobs, err := s.Claim(ctx, ClaimRequest{Owner: "b", Now: t0, Lease: time.Minute, Limit: 10})
	if err != nil || len(jobs) != 2 {
		t.Fatal(jobs, err)
	}
	ids := map[string]string{"ep_a": "dlv_1", "ep_b": "dlv_1", higher: "dlv_2"}
	for _, ep := range []string{"ep_a", "ep_b"} {
		if _, err := s.db.ExecContext(ctx, `UPDATE deliveries SET id = $1 WHERE endpoint_id = $2`, ids[ep], ep); err != nil {
			t.Fatal(err)
		}
	}
	var cs []*Completion
	for _, j := range jobs {
		id := ids[j.Endpoint.ID]
		cs = append(cs, &Completion{Owner: "b", LeaseUntil: j.LeaseUntil, Status: StatusSucceeded, EndpointOK: true,
			Attempt: Attempt{ID: "atmpt_" + id, DeliveryID: id, EventID: "msg_1", EndpointID: j.Endpoint.ID, Started: t0, StatusCode: 200}})
	}
	completed, resent := completeDuringResendRace(t, s, t0, cs)
	if err := completed; err != nil {
		t.Errorf("bulk %v, the higher id to %s: completing both deliveries of an event being resent: %v", bulk, higher, err)
	}
	if err := resent; err != nil {
		t.Errorf("bulk %v, the higher id to %s: resending an event whose deliveries were being completed: %v", bulk, higher, err)
	}
}

// TestDisablingCompleteDuringResend: a dispatcher's batch of a
// completion of one endpoint's delivery of an event and one disabling
// another endpoint, and a user's resend of the event, whose delivery to
// the other endpoint is pending, at once, both succeed: neither is
// killed as a deadlock (40P01). The resend locks the event's deliveries
// in id order; the batch held its first delivery (the higher id), then
// locked the disabled endpoint's pending deliveries (the lower). A
// third transaction holds the higher while the completions, then the
// resend, wait for it.
func TestDisablingCompleteDuringResend(t *testing.T) {
	ctx := context.Background()
	s, t0 := pgStoreAB(t, []string{"msg_1", "msg_2"}, "fsync=off", "deadlock_timeout=100ms")
	jobs, err := s.Claim(ctx, ClaimRequest{Owner: "b", Now: t0, Lease: time.Minute, Limit: 10})
	if err != nil || len(jobs) != 4 {
		t.Fatal(jobs, err)
	}
	for _, q := range []string{`DELETE FROM deliveries WHERE event_id = 'msg_2' AND endpoint_id = 'ep_a'`,
		`UPDATE deliveries SET id = 'dlv_2' WHERE event_id = 'msg_1' AND endpoint_id = 'ep_a'`,
		`UPDATE deliveries SET id = 'dlv_1', lease_owner = '', lease_until = 0 WHERE event_id = 'msg_1' AND endpoint_id = 'ep_b'`,
		`UPDATE deliveries SET id = 'dlv_3' WHERE event_id = 'msg_2' AND endpoint_id = 'ep_b'`} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var cs []*Completion
	for _, j := range jobs {
		switch {
		case j.Endpoint.ID == "ep_a" && j.Event.ID == "msg_1":
			cs = append(cs, &Completion{Owner: "b", LeaseUntil: j.LeaseUntil, Status: StatusSucceeded, EndpointOK: true,
				Attempt: Attempt{ID: "atmpt_2", DeliveryID: "dlv_2", EventID: "msg_1", EndpointID: "ep_a", Started: t0, StatusCode: 200}})
		case j.Endpoint.ID == "ep_b" && j.Event.ID == "msg_2":
			cs = append(cs, &Completion{Owner: "b", LeaseUntil: j.LeaseUntil, Status: StatusFailed, Disable: "gone",
				Attempt: Attempt{ID: "atmpt_3", DeliveryID: "dlv_3", EventID: "msg_2", EndpointID: "ep_b", Started: t0, StatusCode: 410}})
		}
	}
	completed, resent := completeDuringResendRace(t, s, t0, cs)
	if err := completed; err != nil {
		t.Errorf("a batch disabling an endpoint, with a delivery of an event being resent: %v", err)
	}
	if err := resent; err != nil {
		t.Errorf("resending an event, a batch of completions disabling its delivery's endpoint: %v", err)
	}
	var status string
	if err := s.db.QueryRowContext(ctx, `SELECT status FROM deliveries WHERE id = 'dlv_1'`).Scan(&status); err != nil || status != StatusPending && status != StatusPaused {
		t.Errorf("the resent delivery of the disabled endpoint: %q %v", status, err)
	}
}

// completeDuringResendRace runs s's completions cs, then a resend of
// msg_1, while a third transaction holds dlv_2 (see lockRace), and
// returns their errors.
func completeDuringResendRace(t *testing.T, s *sqlStore, t0 time.Time, cs []*Completion) (error, error) {
	t.Helper()
	ctx := context.Background()
	return lockRace(t, s, "dlv_2", func() error { return s.Complete(ctx, cs...) }, func() error {
		_, err := s.Resend(ctx, "msg_1", "", t0.Add(time.Second))
		return err
	})
}
