package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// testClaimRateLimited: a claim returns no more than RateLimited
// deliveries of an endpoint with a rate limit, and PerEndpoint of the
// others.
func testClaimRateLimited(t *testing.T, s store.Store) {
	endpoint(t, s, "ep_a")
	e := endpoint(t, s, "ep_b")
	e.RateLimit = 10
	if err := s.UpdateEndpoint(ctx(t), e); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		event(t, s, fmt.Sprintf("msg_%d", i), "t", t0.Add(time.Duration(i)*time.Millisecond))
	}
	now := t0.Add(time.Second)
	jobs, err := s.Claim(ctx(t), store.ClaimRequest{Owner: "a", Now: now, Lease: time.Minute, Limit: 100, PerEndpoint: 4, RateLimited: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"msg_0>ep_a", "msg_0>ep_b", "msg_1>ep_a", "msg_2>ep_a", "msg_3>ep_a"}
	if got := jobIDs(jobs); !slices.Equal(got, want) {
		t.Fatalf("claimed %v, want %v (ep_b rate limited, 1 of it)", got, want)
	}
}
