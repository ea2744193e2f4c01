package storetest

import (
	"sync"

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
