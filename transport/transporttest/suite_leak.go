package transporttest

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// leakDeadline is how long goroutines get to exit after a pair is closed
// and its cleanups ran.
const leakDeadline = 5 * time.Second

// testNoGoroutineLeak uses a pair, closes it and checks that every
// goroutine started since returns within leakDeadline.
func testNoGoroutineLeak(t *testing.T, h Harness) {
	before := goleak.IgnoreCurrent()
	t.Run("pair", func(t *testing.T) {
		p := newPair(t, h, Faults{})
		const n = 10
		r := newRecorder(t, h, p.Sub)
		done := publishAsync(t, p.pub, 0, n, bulkSize)
		r.collect(done, r.idle, waitFor(h.ContiguousSeq, n-1))
		awaitPublished(t, done)
		p.closePub(p.pub)
		p.closeSub()
	})
	deadline := time.Now().Add(leakDeadline)
	for {
		err := goleak.Find(before)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("goroutines left running %v after the pair was closed: %v", leakDeadline, err)
			return
		}
	}
}
