// Package matrix runs the transport benchmark of `go run ./cmd/bench run`:
// a matrix of scenarios (throughput, open-loop latency, ping-pong round
// trips, fan-out, injected loss, message sizes, durability) over a set of
// contenders — brokerless's transports through their URLs, raw baselines
// (UDP, UDP multicast, TCP) and the peers a user would pick instead
// (libzmq, NATS, JetStream) — in interleaved rounds, every figure beside
// its baseline's from the same run.
//
// A contender is one file: a Contender that opens a Link (a publisher
// and its subscribers) for an Options. Results are a Report: the
// machine, every setting, and per cell (contender × scenario) the figure
// of every round, from which the table, the JSON file, the .hgrm files,
// the plots and Compare are made.
package matrix
