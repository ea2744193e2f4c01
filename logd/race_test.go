//go:build race

package logd

// raceEnabled: the race detector is on, and allocations are larger than
// without it (tests that measure them skip).
const raceEnabled = true
