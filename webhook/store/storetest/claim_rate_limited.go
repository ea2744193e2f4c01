package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// testClaimRateLimited: a claim returns no more than RateLimited
// deliveries of an endpoint with a rate limit, or its RateRoom when
// named there, and PerEndpoint of the others (named in RateRoom or
// not).
func testClaimRateLimited(t *testing.T, s store.Store) {
	endpoint(t, s, "ep_a")
	for _, id := range []string{"ep_b", "ep_c", "ep_d"} {
		e := endpoint(t, s, id)
		e.RateLimit = 10
		if err := s.UpdateEndpoint(ctx(t), e); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		event(t, s, fmt.Sprintf("msg_%d", i), "t", t0.Add(time.Duration(i)*time.Millisecond))
	}
	now := t0.Add(time.Second)
	jobs, err := s.Claim(ctx(t), store.ClaimRequest{Owner: "a", Now: now, Lease: time.Minute, Limit: 100, PerEndpoint: 4, RateLimited: 1,
		RateRoom: map[string]int{"ep_a": 1, "ep_c": 3, "ep_d": 9}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"msg_0>ep_a", "msg_0>ep_b", "msg_0>ep_c", "msg_0>ep_d", "msg_1>ep_a", "msg_1>ep_c", "msg_1>ep_d",
		"msg_2>ep_a", "msg_2>ep_c", "msg_2>ep_d", "msg_3>ep_a", "msg_3>ep_d"}
	if got := jobIDs(jobs); !slices.Equal(got, want) {
		t.Fatalf("claimed %v, want %v (ep_b, ep_c, ep_d rate limited: 1, 3 and 4 (PerEndpoint) of them; ep_a not: 4)", got, want)
	}
}
