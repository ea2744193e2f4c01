//go:build race

package reliable

const raceEnabled = true
