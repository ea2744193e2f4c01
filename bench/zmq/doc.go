// Package zmqbench compares the ZeroMQ transport of brokerless
// (transport/zmq, packing off and on) with libzmq driven from Go
// (github.com/pebbe/zmq4, cgo, Debian's libzmq3-dev) and with raw TCP
// moving the same bytes, for 64-byte messages from one publisher to one
// subscriber over TCP on loopback: message rate, and latency p50/p99 at
// a fixed open-loop rate, in interleaved rounds of one run.
//
//	cd bench && go test -run '^$' -bench ZmqPubSub -benchtime 1x ./zmq/
//
// BROKERLESS_ZMQ_ROUNDS (5), BROKERLESS_ZMQ_MESSAGES (200000, per rate
// run), BROKERLESS_ZMQ_RATE (20000 messages/s, the latency runs) and
// BROKERLESS_ZMQ_LATENCY_MESSAGES (20000) change the run.
package zmqbench
