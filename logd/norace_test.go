//go:build !race

package logd

const raceEnabled = false
