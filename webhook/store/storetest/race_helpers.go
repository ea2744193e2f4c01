package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// completionBatches makes the completions of jobs, the first half one
// by one and the others in batches of size (PostgreSQL writes those in
// bulk), so that a race test covers both ways of recording attempts.
func completionBatches(jobs []*store.Job, size int, completion func(i int, j *store.Job) *store.Completion) [][]*store.Completion {
	var batches [][]*store.Completion
	for i, j := range jobs {
		if i < len(jobs)/2 {
			batches = append(batches, []*store.Completion{completion(i, j)})
			continue
		}
		if (i-len(jobs)/2)%size == 0 {
			batches = append(batches, nil)
		}
		batches[len(batches)-1] = append(batches[len(batches)-1], completion(i, j))
	}
	return batches
}

// together runs each of fns on its own goroutine, all let go at once,
// and returns when all have returned.
func together(fns ...func()) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, f := range fns {
		wg.Go(func() {
			<-start
			f()
		})
	}
	close(start)
	wg.Wait()
}

// claimedRound stores events events of round r, each to the endpoints
// targets, and claims all their deliveries as owner "a" at t0 plus r
// minutes: it returns the jobs and that time.
func claimedRound(t *testing.T, s store.Store, r, events int, targets ...string) ([]*store.Job, time.Time) {
	t.Helper()
	c := ctx(t)
	for i := range events {
		ev := &store.Event{ID: fmt.Sprintf("msg_%d_%02d", r, i), Type: "t", Payload: []byte("{}"), Created: t0}
		if _, err := s.InsertEvent(c, ev, targets...); err != nil {
			t.Fatal(err)
		}
	}
	now := t0.Add(time.Duration(r) * time.Minute)
	want := events * len(targets)
	jobs := claim(t, s, "a", now, want)
	if len(jobs) != want {
		t.Fatalf("round %d: claimed %d, want %d", r, len(jobs), want)
	}
	return jobs, now
}
