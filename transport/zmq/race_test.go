//go:build race

package zmq

// raceEnabled: the race detector slows everything tenfold; bulk tests
// move fewer messages.
const raceEnabled = true
