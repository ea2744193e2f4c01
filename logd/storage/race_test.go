//go:build race

package storage

// raceEnabled: the race detector is on, and sync.Pool drops a share of
// what is put back, so allocation counts do not hold.
const raceEnabled = true
