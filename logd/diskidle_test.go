package logd

import (
	"testing"
	"time"
)

// TestDiskIdle checks BenchmarkProduce1KiB's split of the disk's idle
// time between syncs.
func TestDiskIdle(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	syncs := []span{{at(30), at(40)}, {at(0), at(10)}, {at(15), at(20)}, {at(41), at(45)}}
	// 12: appended after the first sync, 3 ms before the second started;
	// 25 and 26: 5 ms waiting for the request, 5 for the sync; 35:
	// during the third sync, which the fourth started 1 ms after.
	writes := []time.Time{at(26), at(12), at(35), at(25)}
	syncWait, requestWait := diskIdle(syncs, writes)
	if want := 9 * time.Millisecond; syncWait != want {
		t.Errorf("sync wait %v, want %v", syncWait, want)
	}
	if want := 7 * time.Millisecond; requestWait != want {
		t.Errorf("request wait %v, want %v", requestWait, want)
	}
}
