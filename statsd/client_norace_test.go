//go:build !race

package statsd

const clientRaceEnabled = false
