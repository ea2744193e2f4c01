//go:build !race

package zmq

const raceEnabled = false
